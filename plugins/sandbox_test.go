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
	data, err := os.MkdirTemp("", "plugins-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
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
