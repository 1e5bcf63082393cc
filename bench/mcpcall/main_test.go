package main

import (
	"slices"
	"testing"
)

// TestSplitWords: a command's words as a shell splits them, so that a
// path with spaces can be quoted (strings.Fields cut it in two).
func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		`toolbox mcp -f /a/toolbox.hcl`:             {"toolbox", "mcp", "-f", "/a/toolbox.hcl"},
		`'/my dir/toolbox' mcp -f "/my dir/tb.hcl"`: {"/my dir/toolbox", "mcp", "-f", "/my dir/tb.hcl"},
		`/my\ dir/toolbox  a'b c'd "x\"y\\z" ''`:    {"/my dir/toolbox", "ab cd", `x"y\z`, ""},
		`'it'\''s'`:                                 {"it's"},
	} {
		got, err := splitWords(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`'open`, `"open`, `trailing\`} {
		if _, err := splitWords(bad); err == nil {
			t.Errorf("splitWords(%q): no error", bad)
		}
	}
}
