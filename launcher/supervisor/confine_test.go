package supervisor

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// confined sets the fixture's builtin "process" to a sandbox under mech
// that reads ro/ and writes rw/ (relative to the lock), with net and tmp
// as given, and returns the two directories.
func confined(t *testing.T, f *fixture, mech sandbox.Mechanism, net string) (ro, rw string) {
	t.Helper()
	ro, rw = filepath.Join(f.Dir, "ro"), filepath.Join(f.Dir, "rw")
	for _, d := range []string{ro, rw} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ro, "notes"), []byte("readable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Lock.Process = &manifest.ProcessBuiltin{Mechanism: string(mech), Sandbox: &protocol.Sandbox{
		FS: &protocol.FS{Read: []string{"ro"}, Write: []string{"rw"}}, Net: net, Tmp: "shared",
	}}
	if pin := sandbox.Detect().BwrapPin; mech == sandbox.Bwrap && pin != nil {
		f.Lock.Bwrap = &manifest.Pin{Path: pin.Path, SHA256: pin.SHA256} // what lock pins
	}
	return ro, rw
}

// awayFromTmp makes the test's temporary directories (t.TempDir) lie
// outside /tmp: tmp "shared" grants a command the host's /tmp today, which
// would grant the fixture too.
func awayFromTmp(t *testing.T) {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "toolbox-confine-")
	if err != nil {
		t.Fatalf("a directory outside /tmp: %v", err)
	}
	t.Cleanup(func() {
		// As root toolbox mounts a tmpfs on the shared tmp it makes there.
		if err := testenv.DetachMounts(d); err != nil {
			t.Error(err)
		}
		os.RemoveAll(d)
	})
	t.Setenv("TMPDIR", d)
}

// runWait runs a command and waits for its end.
func runWait(t *testing.T, s *Supervisor, c Command) (Status, string) {
	t.Helper()
	c.Wait = 20 * time.Second
	st, err := s.RunCommand(ctxT(t), "sess", c)
	if err != nil {
		t.Fatalf("RunCommand(%q): %v", c.Cmd, err)
	}
	if !st.Done {
		t.Fatalf("%q did not finish: %+v", c.Cmd, st)
	}
	return st, tailText(st)
}

// tailText is the command's stdout tail then its stderr tail.
func tailText(st Status) string {
	var s string
	for _, t := range []*StreamTail{st.Stdout, st.Stderr} {
		if t != nil {
			s += t.Text
		}
	}
	return s
}

// TestConfinedCommands: a background command of a confined builtin
// "process" reads and writes in its grants (the positive twin), and
// cannot read /etc/shadow, write outside its grants, reach a host port
// (bwrap: net none) nor see the caller's other variables; every mechanism
// that runs here is tried.
func TestConfinedCommands(t *testing.T) {
	support := sandbox.Detect()
	for _, mech := range []sandbox.Mechanism{sandbox.Bwrap, sandbox.Landlock} {
		t.Run(string(mech), func(t *testing.T) {
			netDecl := "none"
			if mech == sandbox.Bwrap {
				testenv.Need(t, support.Bwrap, "bwrap", support.BwrapReason)
			} else {
				testenv.Need(t, support.Landlock, "landlock", support.LandlockReason)
				netDecl = "host" // landlock refuses net: none
			}
			awayFromTmp(t)
			f := newFixture(t)
			_, rw := confined(t, f, mech, netDecl)
			outside := t.TempDir()
			s := f.supervisor(t, func(c *Config) {
				c.CallerEnv = append(os.Environ(), "OPERATOR_KEY=k-8c1f")
			})

			// The positive twin: its grants work, and it starts in its
			// writable path.
			st, out := runWait(t, s, Command{Cmd: `cat ../ro/notes && echo made > made && pwd`, Cwd: rw})
			if st.Status != StateExited || !strings.Contains(out, "readable") || !strings.Contains(out, rw) {
				t.Errorf("inside the grants: %s %q", st.Status, out)
			}
			if b, err := os.ReadFile(filepath.Join(rw, "made")); err != nil || string(b) != "made\n" {
				t.Errorf("the write in the grant: %q, %v", b, err)
			}
			// HOME is the command's tmp, so that caches (Go's, ~/.config)
			// stay out of the workspace, and it is writable.
			st, out = runWait(t, s, Command{Cmd: `pwd; echo "home=$HOME key=${OPERATOR_KEY:-unset}"; mkdir -p "$HOME/.cache" && echo cached > "$HOME/.cache/c" && echo home-writable`})
			wantHome := "/tmp"
			if mech == sandbox.Landlock {
				var err error
				if wantHome, err = sandbox.SharedTmpPath(f.LockPath); err != nil {
					t.Fatal(err)
				}
			}
			if st.Status != StateExited || !strings.Contains(out, rw+"\nhome="+wantHome+" key=unset\nhome-writable") {
				t.Errorf("default working directory and environment: %s %q", st.Status, out)
			}
			if _, err := os.Stat(filepath.Join(rw, ".cache")); err == nil {
				t.Errorf("the command's cache landed in its working directory")
			}

			// The attacks.
			st, out = runWait(t, s, Command{Cmd: `cat /etc/shadow`, Cwd: rw})
			if st.Status != StateFailed || strings.Contains(out, "root:") {
				t.Errorf("reading /etc/shadow: %s %q", st.Status, out)
			}
			st, out = runWait(t, s, Command{Cmd: `echo pwned > ` + outside + `/f`, Cwd: rw})
			if _, err := os.Stat(filepath.Join(outside, "f")); err == nil || st.Status != StateFailed {
				t.Errorf("writing outside the grants: %s %q (file there: %v)", st.Status, out, err == nil)
			}
			st, out = runWait(t, s, Command{Cmd: `echo x > ../ro/notes`, Cwd: rw})
			if b, _ := os.ReadFile(filepath.Join(f.Dir, "ro", "notes")); string(b) != "readable\n" || st.Status != StateFailed {
				t.Errorf("writing a read-only grant: %s %q", st.Status, out)
			}
			if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true", Cwd: outside}); err == nil || !strings.Contains(err.Error(), "outside the sandbox") {
				t.Errorf("a working directory outside the sandbox: %v", err)
			}
			// Outside the grants, the answer says nothing of the host path
			// (missing, a file, a directory: all alike). Twin: inside them
			// a missing directory is said to be missing.
			for _, cwd := range []string{filepath.Join(outside, "missing"), "/etc/hostname", "/no-such-dir-toolbox"} {
				_, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true", Cwd: cwd})
				if err == nil || !strings.Contains(err.Error(), "outside the sandbox") || strings.Contains(err.Error(), "no such file") || strings.Contains(err.Error(), "not a directory") {
					t.Errorf("working directory %s outside the grants: %v", cwd, err)
				}
			}
			if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true", Cwd: filepath.Join(rw, "missing")}); err == nil || !strings.Contains(err.Error(), "no such file") {
				t.Errorf("a missing working directory inside the grants: %v", err)
			}
			if mech == sandbox.Bwrap {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				accepted := make(chan struct{}, 1)
				go func() {
					if c, err := ln.Accept(); err == nil {
						c.Close()
						accepted <- struct{}{}
					}
				}()
				_, port, _ := net.SplitHostPort(ln.Addr().String())
				st, out = runWait(t, s, Command{Cmd: `exec 3<>/dev/tcp/127.0.0.1/` + port + ` && echo connected`, Cwd: rw})
				if st.Status != StateFailed || strings.Contains(out, "connected") {
					t.Errorf("reaching a host port under net none: %s %q", st.Status, out)
				}
				select {
				case <-accepted:
					t.Error("the host listener accepted a connection from a net: none command")
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
}

// TestUnconfinedCommands: with unconfined = true a command runs as the
// supervisor's user with the caller's environment and reaches any path.
func TestUnconfinedCommands(t *testing.T) {
	f := newFixture(t) // locktest: builtin "process" unconfined
	outside := t.TempDir()
	s := f.supervisor(t, func(c *Config) { c.CallerEnv = append(os.Environ(), "OPERATOR_KEY=k-8c1f") })
	st, out := runWait(t, s, Command{Cmd: `echo free > ` + outside + `/f; echo "key=$OPERATOR_KEY"`})
	if st.Status != StateExited || !strings.Contains(out, "key=k-8c1f") {
		t.Errorf("unconfined: %s %q", st.Status, out)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "f")); err != nil || string(b) != "free\n" {
		t.Errorf("unconfined write: %q, %v", b, err)
	}
}

// TestConfinedCommandNeverRunsUnconfined: a lock that says confined but
// holds no mechanism able to confine (written by hand) is refused.
func TestConfinedCommandNeverRunsUnconfined(t *testing.T) {
	f := newFixture(t)
	confined(t, f, sandbox.None, "none")
	s := f.supervisor(t)
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true"}); err == nil || !strings.Contains(err.Error(), "never run unconfined") {
		t.Errorf("a confined builtin locked with mechanism none: %v", err)
	}
}
