package runspec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// mcpTestLock has one sandboxed MCP server run by node from an entry
// script, with limits and resolved paths.
func mcpTestLock() *manifest.Lock {
	l := manifest.New()
	l.File = manifest.FileRef{Path: "toolbox.hcl"}
	l.Bwrap = &manifest.Pin{Path: "/usr/bin/bwrap", SHA256: strings.Repeat("a", 64)}
	l.MCPServers = map[string]*manifest.MCPServer{"fs": {
		Command:   []string{"/usr/bin/node", "npm/index.js", "data"},
		PathArgs:  []int{1, 2},
		Entry:     &manifest.HashedFile{Path: "npm/index.js", SHA256: strings.Repeat("b", 64)},
		Mechanism: "bwrap",
		Sandbox:   &protocol.Sandbox{FS: &protocol.FS{Read: []string{"npm"}, Write: []string{"data"}}, Net: "none", Tmp: "private"},
		Paths:     map[string]string{"npm": "npm", "data": "real/data"},
		Limits:    &manifest.Limits{MemoryBytes: 1 << 30, FileSizeBytes: 100},
	}}
	return l
}

// An MCP server gets what a tool gets (DESIGN.md §6): the trust's
// protected and hidden paths and pinned bwrap, its locked limits, its
// paths' lock-time resolutions, and its executable and entry script are
// protected paths of every run.
func TestMCPServerSpec(t *testing.T) {
	dir := t.TempDir()
	l := mcpTestLock()
	lock := filepath.Join(dir, "toolbox.lock.json")
	tr := NewTrust(lock, l, "/var/lib/toolbox")
	for _, want := range []string{"/usr/bin/node", filepath.Join(dir, "npm/index.js")} {
		if !slices.Contains(tr.Protected, want) {
			t.Errorf("%s is not protected: %q", want, tr.Protected)
		}
	}
	spec, err := MCPServerSpec(dir, l, "fs", tr)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Mechanism != sandbox.Bwrap || !spec.NetNone || !spec.TmpPrivate || spec.UnixSockets {
		t.Errorf("confinement %+v", spec)
	}
	if !slices.Equal(spec.Protected, tr.Protected) || !slices.Equal(spec.Hidden, tr.Hidden) || spec.Bwrap != tr.Bwrap {
		t.Errorf("trust not applied: %+v", spec)
	}
	if spec.Limits.Memory != 1<<30 || spec.Limits.FileSize != 100 {
		t.Errorf("limits %+v", spec.Limits)
	}
	if got := spec.Resolved[filepath.Join(dir, "data")]; got != filepath.Join(dir, "real/data") {
		t.Errorf("resolved %v", spec.Resolved)
	}
	if !slices.Equal(spec.Write, []string{filepath.Join(dir, "data")}) || spec.ToolDir != "/usr/bin" {
		t.Errorf("grants %+v", spec)
	}
	// A sandboxed server is never started without the lock's trust.
	if _, err := MCPServerSpec(dir, l, "fs", nil); err == nil {
		t.Error("a sandboxed server without trust was accepted")
	}
	// Nor with a mechanism that cannot confine it (a lock edited by hand).
	l.MCPServers["fs"].Mechanism = "none"
	if _, err := MCPServerSpec(dir, l, "fs", tr); err == nil || !strings.Contains(err.Error(), "never run unconfined") {
		t.Errorf("mechanism none with a sandbox: %v", err)
	}
	// A misused workspace token is refused, not granted as a literal path
	// below the lock's directory ("{workspace}/.." would be the directory).
	l.MCPServers["fs"].Mechanism = "bwrap"
	l.MCPServers["fs"].Sandbox.FS.Write = []string{"{workspace}/../data"}
	if spec, err := MCPServerSpec(dir, l, "fs", tr); !errors.Is(err, protocol.ErrWorkspacePath) {
		t.Errorf("a path above the workspace: %v, %v", spec, err)
	}
}

// An MCP server and an exec tool that declare the same confinement get
// the same sandbox (DESIGN.md §3: "confined exactly as a tool is"): the
// same grants and their lock-time resolutions, network, tmp, limits,
// protected and hidden paths, pinned bwrap and seccomp variant, under
// both mechanisms; and a grant over the lock is refused for both under
// landlock, which cannot mask it.
func TestMCPServerSpecIsAToolsSpec(t *testing.T) {
	dir := t.TempDir()
	lockPath := filepath.Join(dir, "toolbox.lock.json")
	for _, m := range []string{"bwrap", "landlock"} {
		l := mcpTestLock()
		srv := l.MCPServers["fs"]
		srv.Command = []string{filepath.Join(dir, "server")}
		srv.PathArgs, srv.Entry, srv.Mechanism = nil, nil, m
		if m == "landlock" {
			srv.Sandbox.Net, srv.Sandbox.Tmp = "host", "shared"
		}
		l.Tools["t"] = &manifest.Tool{Path: "t", Runtime: manifest.Runtime{Mechanism: m, Paths: srv.Paths, Limits: srv.Limits},
			Describe: &protocol.Describe{Runtime: &protocol.Runtime{Sandbox: srv.Sandbox}}}
		tr := NewTrust(lockPath, l, filepath.Join(dir, "state"))
		server, err := MCPServerSpec(dir, l, "fs", tr)
		if err != nil {
			t.Fatal(err)
		}
		tool, err := Spec(dir, l.Tools["t"], tr)
		if err != nil {
			t.Fatal(err)
		}
		if server.Block != `mcp_server "fs"` {
			t.Errorf("%s: server's Block = %q, want its HCL block (refusals name it)", m, server.Block)
		}
		server.Block = ""
		if !reflect.DeepEqual(server, tool) {
			t.Errorf("%s: server %+v\ntool %+v", m, server, tool)
		}
	}

	// The lock in a write grant: refused for both under landlock.
	l := mcpTestLock()
	srv := l.MCPServers["fs"]
	srv.Command, srv.PathArgs, srv.Entry, srv.Mechanism = []string{filepath.Join(dir, "server")}, nil, nil, "landlock"
	srv.Sandbox = &protocol.Sandbox{FS: &protocol.FS{Write: []string{"."}}, Net: "host", Tmp: "shared"}
	srv.Paths = map[string]string{".": "."}
	l.Tools["t"] = &manifest.Tool{Path: "t", Runtime: manifest.Runtime{Mechanism: "landlock", Paths: srv.Paths},
		Describe: &protocol.Describe{Runtime: &protocol.Runtime{Sandbox: srv.Sandbox}}}
	if err := os.WriteFile(lockPath, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := NewTrust(lockPath, l)
	var refusal *sandbox.RefusalError
	for name, spec := range map[string]func() (*sandbox.Spec, error){
		"server": func() (*sandbox.Spec, error) { return MCPServerSpec(dir, l, "fs", tr) },
		"tool":   func() (*sandbox.Spec, error) { return Spec(dir, l.Tools["t"], tr) },
	} {
		s, err := spec()
		if err == nil {
			err = s.Check()
		}
		if !errors.As(err, &refusal) || !strings.Contains(err.Error(), lockPath) {
			t.Errorf("%s with the lock in its write grant under landlock: %v", name, err)
		}
	}
}
