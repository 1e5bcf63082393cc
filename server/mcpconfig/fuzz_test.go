package mcpconfig

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzMerge: whatever a client's file holds, Merge returns a file or an
// error, never panics; a file it returns reads back and merging into it
// again changes nothing. The seeds (run by go test) are truncated and
// malformed files: a header, string or array cut off at the end.
func FuzzMerge(f *testing.F) {
	for _, seed := range []string{
		"[", "[[", "[a", "[[a]", "a", "a =", "a = ", "a = \"", "a = \"\\", "a = '''", "a = \"\"\"\\",
		"a = [", "a = {", "a = { b", "a = { b = ", "\"", "'", "a.", "a . ", "[\"", "a = [1,",
		"[mcp_servers.toolbox]\ncommand = \"x\"\n", codexConfig,
		"{", "{\"mcpServers\"", "{\"mcpServers\":", "{\"mcpServers\": [", "[]", "null", "{\"a\":1}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, existing string) {
		for _, c := range []Client{Codex, Cursor, VSCode} {
			got, err := Merge(c, []byte(existing), server)
			if err != nil {
				var pe *ParseError
				if !errors.As(err, &pe) && c == Codex {
					t.Logf("%s: %v", c, err)
				}
				continue
			}
			again, err := Merge(c, got, server)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("%s: merging into %q twice: %v\n%s\n---\n%s", c, existing, err, got, again)
			}
		}
	})
}
