package plugins_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// The example read_file plugin, confined as the default toolbox declares it
// (read the data directory only, no network, a private /tmp), still
// completes the handshake over its unix socket and serves calls. Under
// landlock it runs as nobody when toolbox is root: landlock refuses a
// plugin running as uid 0 (it could connect to any socket path, the
// daemon's included), which TestLandlockRefusesRootPlugin shows.
func TestPluginUnderSandbox(t *testing.T) {
	for _, mech := range []sandbox.Mechanism{sandbox.Bwrap, sandbox.Landlock} {
		t.Run(string(mech), func(t *testing.T) {
			s := sandbox.Detect()
			if mech == sandbox.Bwrap {
				testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason)
			} else {
				testenv.Need(t, s.Landlock, "landlock", s.LandlockReason)
			}
			bin := exampleBinary(t, "read_file")
			data := t.TempDir()
			spec := &sandbox.Spec{
				Mechanism:  mech,
				ToolDir:    filepath.Dir(bin),
				NetNone:    mech == sandbox.Bwrap,
				TmpPrivate: mech == sandbox.Bwrap,
				Bwrap:      s.BwrapPin,
			}
			if mech == sandbox.Landlock && os.Geteuid() == 0 {
				spec.RunAs, data = nobodyReadable(t, bin)
			}
			spec.Read = []string{data}
			if err := os.WriteFile(filepath.Join(data, "f.txt"), []byte("1\n2\n3\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := plugins.Options{Dir: data}.Start(ctxT(t), bin, spec, nil)
			if err != nil {
				t.Fatalf("Start under %s: %v", mech, err)
			}
			defer closeAndCheck(t, c)
			var out collect
			res, err := c.Run(ctxT(t), map[string]any{"path": "f.txt", "start": 3}, out.add)
			if err != nil || res.ExitCode != 0 || string(out.chunks) != "3\n" {
				t.Errorf("Run: %+v, %v, %q", res, err, out.chunks)
			}
			// Outside the granted paths the plugin sees nothing.
			res, err = c.Run(ctxT(t), map[string]any{"path": "/etc/shadow"}, nil)
			if err != nil || res.ExitCode == 0 {
				t.Errorf("reading /etc/shadow under %s: %+v, %v", mech, res, err)
			}
		})
	}
}

// A plugin as root under landlock is refused before it runs (the sandbox's
// *RefusalError): Landlock cannot confine its connects to socket paths,
// and as uid 0 it would pass the daemon socket's peer check. Twin: the
// same plugin as nobody starts (TestPluginUnderSandbox/landlock).
func TestLandlockRefusesRootPlugin(t *testing.T) {
	testenv.NeedRoot(t)
	s := sandbox.Detect()
	testenv.Need(t, s.Landlock, "landlock", s.LandlockReason)
	bin := exampleBinary(t, "read_file")
	spec := &sandbox.Spec{Mechanism: sandbox.Landlock, ToolDir: filepath.Dir(bin)}
	_, err := plugins.Options{}.Start(ctxT(t), bin, spec, nil)
	var r *sandbox.RefusalError
	if !errors.As(err, &r) || r.Field != sandbox.FieldSandbox || r.Mechanism != sandbox.Landlock {
		t.Fatalf("Start as root under landlock: %v; want a landlock refusal of %s", err, sandbox.FieldSandbox)
	}
}

// nobodyReadable makes bin's directory traversable and returns nobody's
// identity and a data directory nobody can read (outside the test's
// private temporary directory).
func nobodyReadable(t *testing.T, bin string) (*sandbox.Identity, string) {
	t.Helper()
	uid, gid := testenv.Nobody(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	data := testenv.OpenDir(t, "plugins-nobody")
	return &sandbox.Identity{UID: uid, GID: gid, Groups: []uint32{gid}}, data
}

// Run as another user, the plugin can still create its socket (go-plugin's
// socket directory is handed to that user) and runs with that identity.
func TestPluginRunAs(t *testing.T) {
	testenv.NeedRoot(t)
	bin := exampleBinary(t, "read_file")
	nobody, data := nobodyReadable(t, bin)
	if err := os.WriteFile(filepath.Join(data, "f.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "secret"), []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := &sandbox.Spec{RunAs: nobody}
	c, err := plugins.Options{Dir: data}.Start(ctxT(t), bin, spec, nil)
	if err != nil {
		t.Fatalf("Start as nobody: %v", err)
	}
	defer closeAndCheck(t, c)
	// c.Pid() is the sandbox helper, the plugin's reaper (root); the
	// plugin is its child (forked by one of its threads).
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", c.Pid()))
	var kids []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	if len(kids) != 1 {
		t.Fatalf("the helper's children: %q", kids)
	}
	st, err := os.Stat("/proc/" + kids[0])
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != nobody.UID {
		t.Errorf("plugin runs as uid %d, want %d", uid, nobody.UID)
	}
	var out collect
	if res, err := c.Run(ctxT(t), map[string]any{"path": "f.txt"}, out.add); err != nil || res.ExitCode != 0 || string(out.chunks) != "x\n" {
		t.Errorf("Run: %+v, %v, %q", res, err, out.chunks)
	}
	if res, err := c.Run(ctxT(t), map[string]any{"path": "secret"}, nil); err != nil || res.ExitCode != 1 {
		t.Errorf("reading root's 0600 file as nobody: %+v, %v", res, err)
	}
}

// Nothing a later run trusts is in a plugin's writable socket directory:
// each start gets a new one (go-plugin's "plugin-dir*", mode 0700, owned
// by toolbox's user or handed to run_as), granted writable to that plugin
// alone, and removed when the plugin is closed, so nothing the plugin
// leaves there reaches another start.
func TestSocketDirIsFreshAndRemoved(t *testing.T) {
	s := sandbox.Detect()
	testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason)
	bin := exampleBinary(t, "read_file")
	base, err := os.MkdirTemp("", "plugins-sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	spec := &sandbox.Spec{Mechanism: sandbox.Bwrap, ToolDir: filepath.Dir(bin), NetNone: true, TmpPrivate: true, Bwrap: s.BwrapPin}
	var seen []string
	for range 2 {
		c, err := plugins.Options{SocketDir: base}.Start(ctxT(t), bin, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(base)
		if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "plugin-dir") {
			t.Fatalf("socket directories while the plugin runs: %v", ents)
		}
		st, err := os.Stat(filepath.Join(base, ents[0].Name()))
		if err != nil || st.Mode().Perm() != 0o700 || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
			t.Errorf("socket directory %s: %v, %v; want 0700, owned by toolbox's user", ents[0].Name(), st.Mode(), err)
		}
		seen = append(seen, ents[0].Name())
		closeAndCheck(t, c)
		if ents, _ := os.ReadDir(base); len(ents) != 0 {
			t.Fatalf("left behind after Close: %v", ents)
		}
	}
	if seen[0] == seen[1] {
		t.Errorf("two starts shared the socket directory %s", seen[0])
	}
}
