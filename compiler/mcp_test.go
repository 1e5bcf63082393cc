package compiler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/mcpbackend"
)

// An mcp_server block is read into its declaration: the executable found
// on PATH, the entry script of an interpreter, the arguments that name
// files, the selection and the sandbox with its defaults.
func TestLoadMCPServer(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"srv/main.sh", "data/x"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "toolbox.hcl")
	src := `sandbox = "auto"
mcp_server "s" {
  command = ["sh", "srv/main.sh", "--root", "data", "word", "/etc"]
  env     = { MODE = "x" }
  sandbox {
    fs { read = ["srv", "data"] }
  }
  tools   = ["a", "b"]
  rename  = { b = "s_b" }
  timeout = "7s"
}
capability "c" { backends = ["a", "s_b"] }
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.MCPServers) != 1 {
		t.Fatalf("servers: %+v", cfg.MCPServers)
	}
	d := cfg.MCPServers[0]
	sh, _ := filepath.Abs(d.Exe)
	switch {
	case filepath.Base(d.Exe) != "sh" || sh != d.Exe:
		t.Errorf("Exe %q, want an absolute path to sh", d.Exe)
	case d.Entry != filepath.Join(dir, "srv/main.sh"):
		t.Errorf("Entry %q", d.Entry)
	case !slices.Equal(d.PathArgs, []int{1, 3}):
		t.Errorf("PathArgs %v, want the script and data (not the option, the word, an absolute path)", d.PathArgs)
	case d.Sandbox == nil || d.Sandbox.Net != "host" || d.Sandbox.Tmp != "shared" || !slices.Equal(d.Sandbox.FS.Read, []string{"srv", "data"}):
		t.Errorf("Sandbox %+v", d.Sandbox)
	case d.lockName("b") != "s_b" || d.lockName("a") != "a" || d.Timeout != 7*time.Second || d.Env["MODE"] != "x":
		t.Errorf("decl %+v", d)
	}
}

// check --probe against the lock on disk: the tools of a server whose
// listing changed are failed, and their capability moves on.
func TestMarkDrift(t *testing.T) {
	pin := func(def string) *manifest.Tool {
		sum, err := manifest.DefinitionSHA256([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		return &manifest.Tool{Kind: manifest.KindMCP, MCP: &manifest.MCPTool{Server: "s", Name: "a", SHA256: sum, Definition: json.RawMessage(def)}}
	}
	lockOf := func(def string) *manifest.Lock {
		l := manifest.New()
		l.MCPServers = map[string]*manifest.MCPServer{"s": {Info: manifest.MCPImplementation{Name: "s", Version: "1"}}}
		l.Tools["a"] = pin(def)
		return l
	}
	locked := lockOf(`{"name":"a","description":"x"}`)
	for _, c := range []struct {
		def, status, active string
	}{
		{`{"name":"a","description":"x"}`, manifest.StatusOK, "a"},
		{`{"name":"a","description":"y"}`, manifest.StatusFailed, "b"},
	} {
		res := &Result{
			Lock:         lockOf(c.def),
			Tools:        map[string]*ToolReport{"a": {Name: "a", Status: manifest.StatusOK}, "b": {Name: "b", Status: manifest.StatusUnverified}},
			Capabilities: []CapabilityReport{{Name: "c", Backends: []string{"a", "b"}, Active: "a"}},
		}
		MarkDrift(res, locked)
		if r := res.Tools["a"]; r.Status != c.status || (c.status == manifest.StatusFailed && !strings.Contains(r.Detail, `tool "a": description changed: "x" -> "y"`)) {
			t.Errorf("%s: report %+v", c.def, r)
		}
		if got := res.Capabilities[0].Active; got != c.active {
			t.Errorf("%s: active %q, want %q", c.def, got, c.active)
		}
	}
}

// Two tools of a server that end up with one lock name (a rename onto
// another selected tool's name, or a name listed twice) are refused, not
// pinned one over the other; the positive twin: distinct names lock both.
func TestSelectMCPToolsNameClash(t *testing.T) {
	def := func(name string) mcpbackend.Definition {
		raw := json.RawMessage(`{"name":"` + name + `","inputSchema":{"type":"object"}}`)
		sum, err := manifest.DefinitionSHA256(raw)
		if err != nil {
			t.Fatal(err)
		}
		return mcpbackend.Definition{Name: name, JSON: raw, SHA256: sum}
	}
	defs := []mcpbackend.Definition{def("a"), def("b")}
	for _, c := range []struct {
		name   string
		rename map[string]string
		defs   []mcpbackend.Definition
		want   string // "" = locked
	}{
		{"renamed onto another", map[string]string{"a": "b"}, defs, `tools "a" and "b" of the server would both be tool "b"`},
		{"two renamed alike", map[string]string{"a": "x", "b": "x"}, defs, `tools "a" and "b" of the server would both be tool "x"`},
		{"listed twice", nil, append(slices.Clone(defs), def("a")), `the server lists tool "a" twice`},
		{"distinct", map[string]string{"a": "b", "b": "a"}, defs, ""},
	} {
		d := &MCPServerDecl{Name: "s", Block: `mcp_server "s"`, Rename: c.rename}
		tools, err := (&prober{}).selectMCPTools(d, &manifest.MCPServer{}, c.defs)
		switch {
		case c.want == "" && (err != nil || len(tools) != 2):
			t.Errorf("%s: %v, %v", c.name, tools, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, %v; want %q", c.name, tools, err, c.want)
		}
	}
}

// A server that fails at lock is quoted (its stderr, its error) without
// the values of its envdir of MinMCPSecret bytes or more, as a call's
// failure is (DESIGN.md §4): `toolbox lock` and `check --probe` print it,
// often into CI logs. The short value, a setting, is quoted as it is.
func TestLockRedactsAFailingServersSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) { writeFile(t, dir, name, content) }
	write("toolbox.hcl", `sandbox     = "none"
envdir_root = "env"
mcp_server "leaky" {
  command    = ["/bin/sh", "-c", "echo \"key=$API_KEY level=$LEVEL\" >&2; exit 1"]
  envdir     = true
  unconfined = true
}
`)
	write("env/leaky/API_KEY", "sk-live-0123456789\n")
	write("env/leaky/LEVEL", "warn\n")
	cfg, err := Load(filepath.Join(dir, "toolbox.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	res := Compile(context.Background(), cfg, Options{StateDir: filepath.Join(dir, "state")})
	if len(res.Errs) != 1 {
		t.Fatalf("errors %v", res.Errs)
	}
	msg := res.Errs[0].Error()
	detail := res.Tools["leaky"].Detail
	for _, s := range []string{msg, detail} {
		if strings.Contains(s, "sk-live") || !strings.Contains(s, "key=[redacted] level=warn") {
			t.Errorf("the server's failure quoted as %q", s)
		}
	}
}

// A server whose listing or serverInfo holds a secret of its envdir is
// not locked: the lock is committed and published, and would carry the
// key (a database server describing its tools with its connection
// string, or a hostile one announcing its token as its version). The
// refusal names the place, never the value. The twin: a short value (a
// setting, not a secret) is pinned as announced.
func TestLockRefusesAListingHoldingASecret(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		version string
		refused bool
	}{{"sk-live-0123456789", true}, {"1.2.3", false}} {
		dir := t.TempDir()
		write := func(name, content string) { writeFile(t, dir, name, content) }
		write("toolbox.hcl", fmt.Sprintf(`sandbox     = "none"
envdir_root = "env"
mcp_server "fake" {
  command    = [%q, "tools.json"]
  env        = { COMPILER_HELPER = "mcpfake" }
  envdir     = true
  unconfined = true
}
`, self))
		write("tools.json", `[{"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}]`)
		write("env/fake/MCPFAKE_VERSION", c.version+"\n")
		cfg, err := Load(filepath.Join(dir, "toolbox.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		res := Compile(context.Background(), cfg, Options{StateDir: filepath.Join(dir, "state")})
		if !c.refused {
			if len(res.Errs) > 0 || res.Lock.MCPServers["fake"].Info.Version != c.version {
				t.Fatalf("the twin: %v", res.Errs)
			}
			continue
		}
		if len(res.Errs) != 1 || res.Lock != nil {
			t.Fatalf("a server announcing its key as its version was locked: %v", res.Errs)
		}
		msg := res.Errs[0].Error()
		if strings.Contains(msg, "sk-live") || !strings.Contains(msg, "server version holds a value of the server's envdir") {
			t.Errorf("refusal %q", msg)
		}
	}
}

// writeFile writes content to dir/name, making its directory.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
