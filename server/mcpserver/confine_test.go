package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// TestProcessRunIsConfined: over MCP, process_run of a confined builtin
// "process" says where it runs, writes in its grant and cannot read
// /etc/shadow nor write outside its grants.
func TestProcessRunIsConfined(t *testing.T) {
	support := sandbox.Detect()
	testenv.Need(t, support.Bwrap, "bwrap", support.BwrapReason)
	away, err := os.MkdirTemp("/var/tmp", "toolbox-mcp-") // tmp "shared" grants the host's /tmp today
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// As root toolbox mounts a tmpfs on the shared tmp it makes there.
		if err := testenv.DetachMounts(away); err != nil {
			t.Error(err)
		}
		os.RemoveAll(away)
	})
	t.Setenv("TMPDIR", away)
	f := newFixture(t)
	rw, outside := filepath.Join(f.Dir, "work"), t.TempDir()
	if err := os.Mkdir(rw, 0o755); err != nil {
		t.Fatal(err)
	}
	f.Lock.Builtins = []string{mcpnames.BuiltinProcess}
	f.Lock.Process = &manifest.ProcessBuiltin{Mechanism: "bwrap", Sandbox: &protocol.Sandbox{
		FS: &protocol.FS{Write: []string{"work"}}, Net: "none", Tmp: "shared",
	}}
	if pin := support.BwrapPin; pin != nil {
		f.Lock.Bwrap = &manifest.Pin{Path: pin.Path, SHA256: pin.SHA256} // what lock pins
	}
	rehash(t, f, "sandbox = \"bwrap\"\nbuiltin \"process\" {\n  sandbox {\n    fs { write = [\"work\"] }\n    net = \"none\"\n  }\n}\n")
	e := f.start(t, nil)

	tools, err := e.cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == mcpnames.CommandRunTool && !strings.Contains(tl.Description, "It runs in a sandbox: besides the system directories it may read nothing and write "+rw+"; it has no network") {
			t.Errorf("process_run says: %s", tl.Description)
		}
	}
	run := func(cmd string) supervisor.Status {
		t.Helper()
		var st supervisor.Status
		decode(t, e.call("process_run", map[string]any{"command": cmd, "wait_seconds": 20}), &st)
		if !st.Done {
			t.Fatalf("%q did not finish: %+v", cmd, st)
		}
		return st
	}
	if st := run("echo ok > made; pwd"); st.Status != supervisor.StateExited || tailText(st) != rw+"\n" {
		t.Errorf("in its grant: %+v %q", st.Status, tailText(st))
	}
	if b, err := os.ReadFile(filepath.Join(rw, "made")); err != nil || string(b) != "ok\n" {
		t.Errorf("the file written in the grant: %q, %v", b, err)
	}
	if st := run("cat /etc/shadow"); st.Status != supervisor.StateFailed || strings.Contains(tailText(st), "root:") {
		t.Errorf("reading /etc/shadow: %s %q", st.Status, tailText(st))
	}
	if st := run("echo pwned > " + outside + "/f"); st.Status != supervisor.StateFailed {
		t.Errorf("writing outside its grant: %s %q", st.Status, tailText(st))
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("the command wrote outside its grant")
	}
}

// tailText is the command's stdout tail then its stderr tail.
func tailText(st supervisor.Status) string {
	var s string
	for _, t := range []*supervisor.StreamTail{st.Stdout, st.Stderr} {
		if t != nil {
			s += t.Text
		}
	}
	return s
}
