package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*")

// server has paths a shell or a format could mangle: a space, a quote, a
// backslash, an ampersand, non-ASCII.
var server = Server{
	Name:    "toolbox",
	Command: "/opt/tool box/bin/toolbox",
	Args:    []string{"mcp", "-f", `/home/ana/my "proj"/toolboxes/default/toolbox.hcl`, "--workspace", `/home/ana/my "proj"\sub & é`},
}

// TestSnippetGolden: each client's entry, exactly, in
// testdata/golden/<client>.golden (go test -run TestSnippetGolden -update
// rewrites them; review the diff).
func TestSnippetGolden(t *testing.T) {
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			got, err := Snippet(c, server)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", string(c)+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// The JSON snippets hold the paths as they are (no HTML escaping, no
// replacement), under each client's key.
func TestSnippetJSONRoundTrip(t *testing.T) {
	for c, key := range map[Client]string{ClaudeCode: "mcpServers", ClaudeDesktop: "mcpServers", Cursor: "mcpServers", VSCode: "servers", Gemini: "mcpServers"} {
		data, err := Snippet(c, server)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]map[string]jsonServer
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		got := doc[key]["toolbox"]
		if got.Command != server.Command || !reflect.DeepEqual(got.Args, server.Args) {
			t.Errorf("%s: %+v", c, got)
		}
		if typed := got.Type == "stdio"; typed != (c == ClaudeCode || c == VSCode) {
			t.Errorf("%s: type %q", c, got.Type)
		}
	}
}

func TestServerRefused(t *testing.T) {
	for what, s := range map[string]Server{
		"relative command": {Name: "toolbox", Command: "bin/toolbox"},
		"name with a dot":  {Name: "a.b", Command: "/bin/toolbox"},
		"empty name":       {Name: "", Command: "/bin/toolbox"},
		"invalid UTF-8":    {Name: "toolbox", Command: "/bin/toolbox", Args: []string{"mcp", "/x\xff"}},
	} {
		for _, c := range Clients {
			if _, err := Snippet(c, s); err == nil {
				t.Errorf("%s (%s): accepted", what, c)
			}
		}
	}
	if _, err := Snippet("zed", server); !errors.Is(err, ErrUnknownClient) {
		t.Errorf("unknown client: %v", err)
	}
}

// keys lists a JSON object's keys in order.
func keys(t *testing.T, data []byte) []string {
	t.Helper()
	ms, err := decodeObject(data)
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, m := range ms {
		ks = append(ks, m.key)
	}
	return ks
}

// A merge keeps every other key, its value and its place, and replaces a
// server of the same name in its place.
func TestMergeJSONKeepsEverythingElse(t *testing.T) {
	existing := []byte(`{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"TOKEN": "a<b>&c"}},
    "toolbox": {"command": "/old/toolbox", "args": ["mcp"]},
    "web": {"url": "http://127.0.0.1:8765/mcp"}
  },
  "theme": {"dark": true, "size": 1.50, "big": 12345678901234567890}
}`)
	got, err := Merge(ClaudeDesktop, existing, server)
	if err != nil {
		t.Fatal(err)
	}
	if k := keys(t, got); !reflect.DeepEqual(k, []string{"globalShortcut", "mcpServers", "theme"}) {
		t.Errorf("top-level keys %v", k)
	}
	var before, after map[string]json.RawMessage
	if err := json.Unmarshal(existing, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &after); err != nil {
		t.Fatal(err)
	}
	if k := keys(t, after["mcpServers"]); !reflect.DeepEqual(k, []string{"files", "toolbox", "web"}) {
		t.Errorf("server keys %v", k)
	}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, k := range []string{"globalShortcut", "theme"} {
		if compact(before[k]) != compact(after[k]) {
			t.Errorf("%s changed: %s -> %s", k, before[k], after[k])
		}
	}
	var sb, sa map[string]json.RawMessage
	_ = json.Unmarshal(before["mcpServers"], &sb)
	_ = json.Unmarshal(after["mcpServers"], &sa)
	for _, k := range []string{"files", "web"} {
		if compact(sb[k]) != compact(sa[k]) {
			t.Errorf("server %s changed: %s -> %s", k, sb[k], sa[k])
		}
	}
	var entry jsonServer
	if err := json.Unmarshal(sa["toolbox"], &entry); err != nil || entry.Command != server.Command {
		t.Errorf("toolbox entry %s, %v", sa["toolbox"], err)
	}
	// The servers key is added when missing, after the others.
	got, err = Merge(VSCode, []byte(`{"inputs": []}`), server)
	if err != nil || !reflect.DeepEqual(keys(t, got), []string{"inputs", "servers"}) {
		t.Errorf("adding servers: %s, %v", got, err)
	}
	// Merging again changes nothing.
	again, err := Merge(VSCode, got, server)
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("a second merge changed the file:\n%s\n%s", got, again)
	}
}

// refusal is a file Merge must refuse: a ParseError at line, its reason
// containing reason.
type refusal struct {
	data, reason string
	line         int
}

func assertRefused(t *testing.T, c Client, cases map[string]refusal) {
	t.Helper()
	for what, r := range cases {
		_, err := Merge(c, []byte(r.data), server)
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, r.reason) || pe.Line != r.line {
			t.Errorf("%s: %v, want a ParseError at line %d saying %q", what, err, r.line, r.reason)
		}
	}
}

func TestMergeJSONRefusesWhatItCannotRead(t *testing.T) {
	assertRefused(t, VSCode, map[string]refusal{
		"comment":           {"{\n  // mine\n  \"servers\": {}\n}", "comments are not JSON", 2},
		"trailing comma":    {"{\"servers\": {},\n}", "invalid character '}'", 2},
		"array":             {"[]", "not a JSON object", 1},
		"servers not table": {"{\n\"servers\": []}", `"servers" is not an object`, 2},
		// The line of the key, not of the first text equal to its value.
		"same value before": {"{\"a\": [],\n\"servers\": []}", `"servers" is not an object`, 2},
		"duplicate key":     {`{"servers": {}, "servers": {}}`, `key "servers" appears twice`, 1},
		"text after":        {`{} {}`, "text after the object", 1},
		"truncated":         {`{"servers": {`, "unexpected EOF", 1},
	})
}

const codexConfig = `# Codex
model = "o3"
approval_policy = "on-request"

[mcp_servers.files]
command = "npx"
args = [
  "-y", # the package
  "@modelcontextprotocol/server-filesystem",
]
env = { "A" = "1", B = 'two' }

# ours, from before
[mcp_servers.toolbox]
command = "/old/toolbox"
args = ["mcp"]

[mcp_servers.toolbox.env]
X = "1"

# profiles
[profiles.deep]
model = """
[mcp_servers.toolbox]
"""
when = 1979-05-27 07:32:00Z

[[notes]]
text = 'a [table] in a string'
`

// The TOML merge edits only the lines of the entry's tables (sub-tables
// included), in place; the rest stays byte for byte.
func TestMergeTOMLReplacesInPlace(t *testing.T) {
	got, err := Merge(Codex, []byte(codexConfig), server)
	if err != nil {
		t.Fatal(err)
	}
	table := tomlTable(server)
	want := strings.Replace(codexConfig, "[mcp_servers.toolbox]\ncommand = \"/old/toolbox\"\nargs = [\"mcp\"]\n\n[mcp_servers.toolbox.env]\nX = \"1\"\n", table, 1)
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	again, err := Merge(Codex, got, server)
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("a second merge changed the file: %v\n%s", err, again)
	}
}

func TestMergeTOMLAppends(t *testing.T) {
	for existing, want := range map[string]string{
		"":                             "",
		"model = \"o3\"":               "model = \"o3\"\n\n",
		"model = \"o3\"\n":             "model = \"o3\"\n\n",
		"[mcp_servers]\nx.command = 1": "[mcp_servers]\nx.command = 1\n\n",
	} {
		got, err := Merge(Codex, []byte(existing), server)
		if err != nil || string(got) != want+tomlTable(server) {
			t.Errorf("merge into %q: %v\n%s", existing, err, got)
		}
	}
}

func TestMergeTOMLRefuses(t *testing.T) {
	assertRefused(t, Codex, map[string]refusal{
		"dotted key":          {"model = 1\nmcp_servers.toolbox.command = \"x\"\n", "defined by a key = value line", 2},
		"inline in table":     {"[mcp_servers]\ntoolbox = { command = \"x\" }\n", "defined by a key = value line", 2},
		"all servers inline":  {"mcp_servers = { a = { command = \"x\" } }\n", "defined by a key = value line", 1},
		"array of tables":     {"[[mcp_servers.toolbox]]\ncommand = \"x\"\n", "array of tables", 1},
		"unterminated string": {"a = 1\nb = \"x\n", "does not end on its line", 2},
		"unterminated multi":  {"a = '''\nx\n", "multi-line string does not end", 1},
		"unclosed array":      {"a = [1, 2\n", "expected , or ]", 2},
		"bad header":          {"[a\n", "does not end in ]", 1},
		"no equals":           {"just words\n", "expected = after the key", 1},
		"bare word value":     {"a = yes\n", "expected a value", 1},
		"text after value":    {"a = 1 2\n", "unexpected text after the value", 1},
	})
}

func TestFile(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	p := Places{Home: "/home/ana", Workspace: "/src/proj", GOOS: "linux", Getenv: env(nil)}
	for _, c := range []struct {
		client Client
		places Places
		want   string
	}{
		{ClaudeCode, p, "/src/proj/.mcp.json"},
		{Cursor, p, "/src/proj/.cursor/mcp.json"},
		{VSCode, p, "/src/proj/.vscode/mcp.json"},
		{Gemini, p, "/src/proj/.gemini/settings.json"},
		{Codex, p, "/home/ana/.codex/config.toml"},
		{Codex, Places{Home: "/home/ana", Getenv: env(map[string]string{"CODEX_HOME": "/cx"})}, "/cx/config.toml"},
		{ClaudeDesktop, p, "/home/ana/.config/Claude/claude_desktop_config.json"},
		{ClaudeDesktop, Places{Home: "/home/ana", GOOS: "linux", Getenv: env(map[string]string{"XDG_CONFIG_HOME": "/xdg"})}, "/xdg/Claude/claude_desktop_config.json"},
		{ClaudeDesktop, Places{Home: "/Users/ana", GOOS: "darwin"}, "/Users/ana/Library/Application Support/Claude/claude_desktop_config.json"},
	} {
		got, err := File(c.client, c.places)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.client, got, err, c.want)
		}
	}
	if _, err := File(Codex, Places{}); err == nil {
		t.Errorf("codex without a home: no error")
	}
}

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Write keeps the old file as a backup with its mode, replaces the file
// (no temporary file left), and on a second identical merge does nothing.
func TestWriteKeepsABackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	old := []byte(`{"servers": {"other": {"command": "x"}}, "inputs": []}`)
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Write(path, VSCode, server, now)
	if err != nil {
		t.Fatal(err)
	}
	wantBackup := path + ".toolbox-backup-20260304T050607Z"
	if w.File != path || w.Backup != wantBackup || w.Unchanged {
		t.Errorf("Written %+v", w)
	}
	if b, err := os.ReadFile(wantBackup); err != nil || !bytes.Equal(b, old) {
		t.Errorf("backup %q, %v", b, err)
	}
	for _, p := range []string{path, wantBackup} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600 kept", p, st.Mode(), err)
		}
	}
	want, _ := Merge(VSCode, old, server)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("file:\n%s", got)
	}
	// A second write in the same second changes nothing, backs up nothing.
	w, err = Write(path, VSCode, server, now)
	if err != nil || !w.Unchanged || w.Backup != "" {
		t.Errorf("second write: %+v, %v", w, err)
	}
	// Another server name: a second backup beside the first.
	other := server
	other.Name = "toolbox-2"
	w, err = Write(path, VSCode, other, now)
	if err != nil || w.Backup != wantBackup+"-2" {
		t.Errorf("third write: %+v, %v", w, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("files left: %v (a temporary file?)", entries)
	}
}

// A file it cannot read is refused, untouched, with no backup.
func TestWriteRefusesWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	old := []byte("{\n  // my settings\n  \"theme\": \"dark\"\n}\n")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Write(path, Gemini, server, now)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != path || pe.Line != 2 {
		t.Fatalf("err %v, want a ParseError for %s line 2", err, path)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
		t.Errorf("the file changed:\n%s", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files: %v", entries)
	}
}

// A missing file is created with its directory; a link is followed and
// kept.
func TestWriteCreatesAndFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".cursor", "mcp.json")
	w, err := Write(path, Cursor, server, now)
	if err != nil || w.Backup != "" || w.File != path {
		t.Fatalf("%+v, %v", w, err)
	}
	want, _ := Snippet(Cursor, server)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("new file:\n%s", got)
	}
	target := filepath.Join(dir, "dotfiles", "config.toml")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("model = \"o3\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.toml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	w, err = Write(link, Codex, server, now)
	if err != nil || w.File != target {
		t.Fatalf("%+v, %v", w, err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if got, _ := os.ReadFile(link); !strings.HasSuffix(string(got), tomlTable(server)) {
		t.Errorf("through the link:\n%s", got)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(filepath.Join(dir, "adir"), Cursor, server, now); err == nil {
		t.Errorf("writing over a directory: no error")
	}
}

// TestInProject: a project-scoped file names the toolbox file and the
// workspace relative to the project (through the client's own variable
// where it has one), so that a committed file holds in another clone; a
// user's file keeps absolute paths and may not name toolbox by PATH.
func TestInProject(t *testing.T) {
	for _, c := range []struct {
		client    Client
		path      string
		want      string
		projected bool
	}{
		{ClaudeCode, "/src/mono/svc/toolbox.hcl", "toolbox.hcl", true},
		{ClaudeCode, "/src/mono/svc", ".", true},
		{Gemini, "/src/mono/toolbox.hcl", "../toolbox.hcl", true},
		{VSCode, "/src/mono/svc/.toolbox/toolbox.hcl", "${workspaceFolder}/.toolbox/toolbox.hcl", true},
		{Cursor, "/src/mono/svc", "${workspaceFolder}", true},
		{Codex, "/src/mono/svc", "", false},
		{ClaudeDesktop, "/src/mono/svc", "", false},
	} {
		if got := c.client.ProjectScoped(); got != c.projected {
			t.Errorf("%s: ProjectScoped = %t", c.client, got)
		}
		if !c.projected {
			if _, err := Snippet(c.client, Server{Name: "toolbox", Command: "toolbox"}); err == nil {
				t.Errorf("%s: a bare command accepted in the user's file", c.client)
			}
			continue
		}
		if got := InProject(c.client, "/src/mono/svc", c.path); got != c.want {
			t.Errorf("%s: InProject(%q) = %q, want %q", c.client, c.path, got, c.want)
		}
		if _, err := Snippet(c.client, Server{Name: "toolbox", Command: "toolbox", Args: []string{"mcp", "-f", c.want}}); err != nil {
			t.Errorf("%s: %v", c.client, err)
		}
	}
}
