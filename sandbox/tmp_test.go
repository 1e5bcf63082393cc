package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// sharedTmp makes the shared tmp of a fresh toolbox (its lock in a temp
// dir), a plain directory, and removes it at the end.
func sharedTmp(t *testing.T) string {
	t.Helper()
	dir, _ := sharedTmpSized(t, 0)
	return dir
}

// sharedTmpSized makes the shared tmp of a fresh toolbox bounded to size
// bytes (0: none) and returns it and the size of the tmpfs mounted there
// (0 when none: not root); at the end it detaches that mount and removes
// the directory.
func sharedTmpSized(t testing.TB, size uint64) (dir string, mounted uint64) {
	t.Helper()
	dir, mounted, err := SharedTmpDir(filepath.Join(t.TempDir(), "toolbox.lock.json"), size)
	must(t, err)
	t.Cleanup(func() {
		if err := testenv.DetachMounts(dir); err != nil {
			t.Error(err)
		}
		os.RemoveAll(dir)
	})
	return dir, mounted
}

// hostTmpMarker puts a file in the host's /tmp that no tool may see.
func hostTmpMarker(t *testing.T) (marker, made string) {
	t.Helper()
	f, err := os.CreateTemp("/tmp", "sandbox-marker-")
	must(t, err)
	must(t, f.Close())
	must(t, os.WriteFile(f.Name(), []byte("host secret\n"), 0o644))
	made = f.Name() + "-made"
	t.Cleanup(func() { os.Remove(f.Name()); os.Remove(made) })
	return f.Name(), made
}

// Issue 10 #3: tmp: shared (the default) bound the host's whole /tmp; a
// tool read and wrote every file there. Now neither mechanism gives the
// host's /tmp: the tool's /tmp (bwrap) and $TMPDIR (both) are the
// toolbox's own shared directory. Twin: writing there works and reaches
// that directory.
func TestHostTmpNeverGiven(t *testing.T) {
	marker, made := hostTmpMarker(t)
	env := []string{"MARKER=" + marker, "MADE=" + made}
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			shared := sharedTmp(t)
			spec := tr.spec(m)
			spec.SharedTmp = shared
			r := runSh(t, spec, `cat "$MARKER"; echo x > "$MADE"; echo y > "$TMPDIR/mine" && echo "tmpdir=$TMPDIR"`, env...)
			if strings.Contains(r.stdout, "host secret") {
				t.Fatalf("the tool read the host's /tmp: stdout %q", r.stdout)
			}
			if _, err := os.Stat(made); err == nil {
				t.Fatal("a write to /tmp reached the host's /tmp")
			}
			want := shared
			if m == Bwrap {
				want = "/tmp"
			}
			if !strings.Contains(r.stdout, "tmpdir="+want+"\n") {
				t.Fatalf("TMPDIR: stdout %q, stderr %q, want %s", r.stdout, r.stderr, want)
			}
			if b, err := os.ReadFile(filepath.Join(shared, "mine")); err != nil || string(b) != "y\n" {
				t.Fatalf("the write to $TMPDIR did not reach the shared tmp: %q, %v", b, err)
			}
		})
	}
	t.Run("bwrap-private", func(t *testing.T) {
		requireMechanism(t, Bwrap)
		r := runSh(t, pin(&Spec{Mechanism: Bwrap, TmpPrivate: true}), `cat "$MARKER"; echo x > /tmp/f && cat /tmp/f`, env...)
		if r.stdout != "x\n" {
			t.Fatalf("private /tmp: stdout %q, stderr %q", r.stdout, r.stderr)
		}
	})
	t.Run("landlock-private", func(t *testing.T) {
		_, err := Start(&Spec{Mechanism: Landlock, TmpPrivate: true}, Command{Path: "/bin/true"})
		wantRefusal(t, err, FieldTmp)
	})
}

// Issue 10 #4: with the host's /tmp shared, a bwrap tool with net: none
// connected to any host unix socket in /tmp (a tmux server, the toolbox
// daemon). Twin: a socket in the shared tmp still connects.
func TestHostTmpSocketUnreachable(t *testing.T) {
	requireMechanism(t, Bwrap)
	dir, err := os.MkdirTemp("/tmp", "sandbox-sock-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	host := listenStream(t, "unix", filepath.Join(dir, "s"))
	shared := sharedTmp(t)
	// UnixSockets (a plugin's): the seccomp filter would refuse the
	// socket before the mount namespace is even tried.
	spec := pin(&Spec{Mechanism: Bwrap, NetNone: true, SharedTmp: shared, UnixSockets: true})
	if ok, why := reached(t, spec, host); ok {
		t.Fatalf("a host socket in /tmp was reached (%s)", why)
	}
	own := listenStream(t, "unix", filepath.Join(shared, "s"))
	spec = pin(&Spec{Mechanism: Bwrap, NetNone: true, SharedTmp: shared, UnixSockets: true})
	if ok, why := reached(t, spec, own); !ok {
		t.Fatalf("a socket in the shared tmp was not reached: %s", why)
	}
}

// Two tools of one toolbox share files through the shared tmp, whatever
// their mechanism; a tool of another toolbox does not see them.
func TestSharedTmpBetweenTools(t *testing.T) {
	requireMechanism(t, Bwrap)
	requireMechanism(t, Landlock)
	shared := sharedTmp(t)
	w := runSh(t, pin(&Spec{Mechanism: Bwrap, SharedTmp: shared}), `echo from-bwrap > /tmp/note`)
	r := runSh(t, &Spec{Mechanism: Landlock, SharedTmp: shared}, `cat "$TMPDIR/note"; echo from-landlock > "$TMPDIR/reply"`)
	if w.code != 0 || r.stdout != "from-bwrap\n" {
		t.Fatalf("bwrap wrote (exit %d, %q), landlock read %q (stderr %q)", w.code, w.stderr, r.stdout, r.stderr)
	}
	r = runSh(t, pin(&Spec{Mechanism: Bwrap, SharedTmp: shared}), `cat /tmp/reply`)
	if r.stdout != "from-landlock\n" {
		t.Fatalf("bwrap read %q (stderr %q)", r.stdout, r.stderr)
	}
	other := sharedTmp(t)
	if other == shared {
		t.Fatal("two toolboxes got the same shared tmp")
	}
	r = runSh(t, pin(&Spec{Mechanism: Bwrap, SharedTmp: other}), `cat /tmp/note`)
	if strings.Contains(r.stdout, "from-bwrap") {
		t.Fatal("another toolbox's tool saw the shared tmp")
	}
}

// A tool run as another user writes into the shared tmp (mode 1777) and
// cannot remove a file of another user there (sticky).
func TestSharedTmpAsNobody(t *testing.T) {
	requireRoot(t)
	shared := sharedTmp(t)
	must(t, os.WriteFile(filepath.Join(shared, "roots"), []byte("r\n"), 0o644))
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			nobody := &Identity{UID: 65534, GID: 65534, Groups: []uint32{65534}}
			r := runSh(t, pin(&Spec{Mechanism: m, SharedTmp: shared, RunAs: nobody}), `echo n > "$TMPDIR/n-`+string(m)+`" && echo wrote; rm -f "$TMPDIR/roots" 2>/dev/null; echo done`)
			if r.stdout != "wrote\ndone\n" {
				t.Fatalf("stdout %q, stderr %q", r.stdout, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(shared, "roots")); err != nil {
				t.Fatal("a tool removed another user's file from the shared tmp")
			}
		})
	}
}

// The shared tmp is created without following symlinks, and checked at
// every start: a symlink, another owner or another mode put in its place
// is refused, never followed or repaired. Twin: a fresh one has the right
// owner and modes.
func TestSharedTmpTamperedIsRefused(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "toolbox.lock.json")
	dir, _, err := SharedTmpDir(lock, 0)
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	var st unix.Stat_t
	must(t, unix.Lstat(dir, &st))
	if st.Mode&0o7777 != 0o1777 || int(st.Uid) != os.Geteuid() {
		t.Fatalf("shared tmp mode %#o uid %d", st.Mode&0o7777, st.Uid)
	}
	must(t, unix.Lstat(filepath.Dir(dir), &st))
	if st.Mode&0o7777 != 0o711 || int(st.Uid) != os.Geteuid() {
		t.Fatalf("parent mode %#o uid %d", st.Mode&0o7777, st.Uid)
	}
	if again, _, err := SharedTmpDir(lock, 0); err != nil || again != dir {
		t.Fatalf("second call: %q, %v", again, err)
	}
	tampers := []struct {
		name string
		do   func()
	}{
		{"symlink to /root", func() { must(t, os.RemoveAll(dir)); must(t, os.Symlink("/root", dir)) }},
		{"world-writable without sticky", func() { must(t, os.RemoveAll(dir)); must(t, os.Mkdir(dir, 0o777)); must(t, os.Chmod(dir, 0o777)) }},
	}
	if os.Geteuid() == 0 {
		tampers = append(tampers, struct {
			name string
			do   func()
		}{"owned by nobody", func() {
			must(t, os.RemoveAll(dir))
			must(t, os.Mkdir(dir, 0o777))
			must(t, os.Chmod(dir, 0o1777))
			must(t, os.Chown(dir, 65534, 65534))
		}})
	}
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			tc.do()
			t.Cleanup(func() { os.RemoveAll(dir) })
			if _, _, err := SharedTmpDir(lock, 0); err == nil {
				t.Fatal("SharedTmpDir accepted it")
			}
			for _, m := range sandboxed {
				_, err := Start(pin(&Spec{Mechanism: m, SharedTmp: dir}), Command{Path: "/bin/true"})
				wantRefusal(t, err, FieldTmp)
			}
			must(t, os.RemoveAll(dir))
			if _, _, err := SharedTmpDir(lock, 0); err != nil {
				t.Fatalf("recreating after removal: %v", err)
			}
		})
	}
}

// Declaring the host's /tmp (or a parent of it) is refused: it is never
// given (decision D1). A directory below it is an ordinary path. A
// declared path inside the shared tmp is refused too (it is given whole).
func TestDeclaredHostTmpIsRefused(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			for _, p := range []string{"/tmp", "/"} {
				_, err := Start(pin(&Spec{Mechanism: m, Read: []string{p}}), Command{Path: "/bin/true"})
				if r := wantRefusal(t, err, FieldRead); !strings.Contains(r.Reason, "host's /tmp") {
					t.Fatalf("reason %q", r.Reason)
				}
			}
			shared := sharedTmp(t)
			must(t, os.Mkdir(filepath.Join(shared, "sub"), 0o755))
			_, err := Start(pin(&Spec{Mechanism: m, SharedTmp: shared, Read: []string{filepath.Join(shared, "sub")}}), Command{Path: "/bin/true"})
			wantRefusal(t, err, FieldRead)
			below, err := os.MkdirTemp("/tmp", "sandbox-below-")
			must(t, err)
			t.Cleanup(func() { os.RemoveAll(below) })
			must(t, os.WriteFile(below+"/f", []byte("ok\n"), 0o644))
			r := runSh(t, pin(&Spec{Mechanism: m, Read: []string{below}}), `cat "$B/f"`, "B="+below)
			if r.stdout != "ok\n" {
				t.Fatalf("a directory below /tmp: stdout %q, stderr %q", r.stdout, r.stderr)
			}
		})
	}
}

// A bwrap tool with a granted path under the host's /tmp (a tool kept
// there) gets a fresh /tmp and the shared tmp in $TMPDIR at its own path,
// and bwrap creates no mount point inside the shared tmp.
func TestSharedTmpWithGrantUnderTmp(t *testing.T) {
	requireMechanism(t, Bwrap)
	shared := sharedTmp(t)
	tool, err := os.MkdirTemp("/tmp", "sandbox-tool-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(tool) })
	marker, _ := hostTmpMarker(t)
	r := runSh(t, pin(&Spec{Mechanism: Bwrap, SharedTmp: shared, ToolDir: tool}), `echo s > "$TMPDIR/f" && echo "$TMPDIR"; cat "$MARKER"`, "MARKER="+marker)
	if r.stdout != shared+"\n" {
		t.Fatalf("stdout %q, stderr %q, want $TMPDIR %s and no host file", r.stdout, r.stderr, shared)
	}
	if _, err := os.Stat(filepath.Join(shared, "f")); err != nil {
		t.Fatalf("the write to $TMPDIR did not reach the shared tmp: %v", err)
	}
	ents, err := os.ReadDir(shared)
	must(t, err)
	if len(ents) != 1 {
		t.Fatalf("the shared tmp holds %d entries (mount points created there?)", len(ents))
	}
}

// The directory holding every toolbox's shared tmp (<tmp>/toolbox-<uid>),
// and any other toolbox's shared tmp in it, is refused as a declared
// path, read or write, under both mechanisms (a grant of it handed a tool
// every other toolbox's scratch files, and the power to replace their
// directories); even with tmp private, where the tool has no shared tmp
// of its own. Twin: a directory beside it under /tmp whose name merely
// starts alike is granted, and the tool's own shared tmp still works.
func TestSharedTmpRootIsRefused(t *testing.T) {
	shared := sharedTmp(t)
	other := sharedTmp(t)
	root := filepath.Dir(shared)
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			for _, c := range []struct {
				spec  Spec
				field string
			}{
				{Spec{Write: []string{root}}, FieldWrite},
				{Spec{Read: []string{root}}, FieldRead},
				{Spec{Write: []string{other}}, FieldWrite},
				{Spec{Read: []string{other}}, FieldRead},
			} {
				spec := c.spec
				spec.Mechanism, spec.SharedTmp = m, shared
				_, err := Start(pin(&spec), Command{Path: "/bin/true"})
				if r := wantRefusal(t, err, c.field); !strings.Contains(r.Reason, root) {
					t.Errorf("%v: reason %q does not name %s", c.spec, r.Reason, root)
				}
				if m == Bwrap {
					spec.SharedTmp, spec.TmpPrivate = "", true
					_, err := Start(pin(&spec), Command{Path: "/bin/true"})
					wantRefusal(t, err, c.field)
				}
			}
			alike, err := os.MkdirTemp(filepath.Dir(root), "toolbox-not-a-uid-")
			must(t, err)
			t.Cleanup(func() { os.RemoveAll(alike) })
			r := runSh(t, pin(&Spec{Mechanism: m, SharedTmp: shared, Write: []string{alike}}),
				`echo a > "$A/f" && echo b > "$TMPDIR/g" && cat "$A/f" "$TMPDIR/g"`, "A="+alike)
			if r.stdout != "a\nb\n" {
				t.Fatalf("twin: stdout %q, stderr %q", r.stdout, r.stderr)
			}
		})
	}
}

// TestSharedTmpRootInsideAGrant: with toolbox's TMPDIR inside a writable
// grant (TMPDIR=$PWD/.tmp, a workspace the tool may write), the shared tmp
// root <TMPDIR>/toolbox-<uid>, which holds every toolbox's shared tmp, is
// reachable through that grant. bwrap hides it (the tool's own shared tmp
// stays its $TMPDIR); landlock, which cannot mask, refuses the grant naming
// the root and the fix. Twins: the grant still works (bwrap), and under
// landlock a TMPDIR outside the grant.
func TestSharedTmpRootInsideAGrant(t *testing.T) {
	ws, elsewhere := t.TempDir(), t.TempDir()
	tmpdir := filepath.Join(ws, ".tmp")
	must(t, os.Mkdir(tmpdir, 0o755))
	t.Setenv("TMPDIR", tmpdir)
	shared := sharedTmp(t)
	other := sharedTmp(t)
	root := filepath.Dir(shared)
	if filepath.Dir(other) != root || !strings.HasPrefix(root, tmpdir+"/") {
		t.Fatalf("shared tmps %s, %s: not in %s", shared, other, tmpdir)
	}
	must(t, os.WriteFile(filepath.Join(other, "secret"), []byte("other toolbox\n"), 0o644))
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			spec := &Spec{Mechanism: m, SharedTmp: shared, Write: []string{ws}}
			if m == Landlock {
				_, err := Start(pin(spec), Command{Path: "/bin/true"})
				r := wantRefusal(t, err, FieldWrite)
				if !strings.Contains(r.Reason, root) || !strings.Contains(r.Fix, "TMPDIR") {
					t.Errorf("refusal %q (fix %q) names neither %s nor TMPDIR", r.Reason, r.Fix, root)
				}
				// Twin: the same grant with TMPDIR outside it.
				t.Setenv("TMPDIR", elsewhere)
				out := sharedTmp(t)
				r2 := runSh(t, pin(&Spec{Mechanism: m, SharedTmp: out, Write: []string{ws}}),
					`echo a > "$W/f" && echo b > "$TMPDIR/g" && cat "$W/f" "$TMPDIR/g"`, "W="+ws)
				if r2.stdout != "a\nb\n" {
					t.Fatalf("twin: stdout %q, stderr %q", r2.stdout, r2.stderr)
				}
				return
			}
			r := runSh(t, pin(spec), `
				cat "$R/`+filepath.Base(other)+`/secret" 2>/dev/null && echo READ
				ls -A "$R" 2>/dev/null | grep -vx "${TMPDIR##*/}" && echo LISTED
				mkdir "$R/planted" 2>/dev/null && echo PLANTED
				echo a > "$W/f" && echo b > "$TMPDIR/g" && cat "$W/f" "$TMPDIR/g"`, "R="+root, "W="+ws)
			if r.stdout != "a\nb\n" {
				t.Fatalf("stdout %q (want the grant and /tmp to work, the root hidden), stderr %q", r.stdout, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(shared, "g")); err != nil {
				t.Errorf("the tool's /tmp is not its shared tmp: %v\n%s", err, r.stderr)
			}
		})
	}
}
