package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// toolboxTree is a workspace the tool may write (a write grant over the
// whole repository, say) holding a toolbox in a directory of its own
// ($WORK/box) and what a later run trusts.
type toolboxTree struct {
	tree
	Lock, File, Bin, State string
}

func newToolboxTree(t *testing.T) toolboxTree {
	t.Helper()
	tb := toolboxTree{tree: newTree(t)}
	must(t, os.Mkdir(tb.Work+"/box", 0o777))
	tb.Lock = tb.Work + "/box/toolbox.lock.json"
	tb.File = tb.Work + "/box/toolbox.hcl"
	tb.Bin = tb.Work + "/tools/deep/tool"
	tb.State = tb.Work + "/state"
	must(t, os.MkdirAll(filepath.Dir(tb.Bin), 0o777))
	must(t, os.WriteFile(tb.Lock, []byte(`{"locked": true}`+"\n"), 0o644))
	must(t, os.WriteFile(tb.File, []byte("sandbox = \"auto\"\n"), 0o644))
	must(t, os.WriteFile(tb.Bin, []byte("#!/bin/sh\necho real\n"), 0o755))
	must(t, os.Mkdir(tb.State, 0o700))
	must(t, os.WriteFile(tb.State+"/record.json", []byte("record\n"), 0o600))
	return tb
}

func (tb toolboxTree) guardedSpec(m Mechanism) *Spec {
	s := pin(tb.spec(m))
	s.Protected = []string{tb.Lock, tb.File, tb.Bin}
	s.Hidden = []string{tb.State}
	return s
}

// Issue 10 #2: a bwrap tool whose write grant covers the toolbox directory
// rewrote the lock (mechanism none, run_as dropped), so the next run was
// unconfined root. Now the directory of every protected file is mounted
// read-only on top of the grant: writing, truncating, renaming over,
// deleting and hard linking it fail, and so does renaming a parent
// directory away to put a forged copy in its place; the state directory is
// hidden. Twin: the tool still writes everything else in its grant.
func TestProtectedPathsMaskedByBwrap(t *testing.T) {
	requireMechanism(t, Bwrap)
	tb := newToolboxTree(t)
	attacks := map[string]string{
		"write":        `echo '{"forged": true}' > "$WORK/box/toolbox.lock.json"`,
		"append":       `echo x >> "$WORK/box/toolbox.hcl"`,
		"truncate":     `: > "$WORK/box/toolbox.lock.json"`,
		"rename over":  `echo forged > "$WORK/forged" && mv -f "$WORK/forged" "$WORK/box/toolbox.lock.json"`,
		"delete":       `rm -f "$WORK/box/toolbox.lock.json"`,
		"hard link":    `ln "$WORK/box/toolbox.lock.json" "$WORK/lock-link" && echo linked`,
		"chmod":        `chmod 666 "$WORK/box/toolbox.lock.json"`,
		"move box":     `mv "$WORK/box" "$WORK/box-old" && mkdir "$WORK/box" && echo forged > "$WORK/box/toolbox.lock.json"`,
		"binary":       `printf '#!/bin/sh\necho evil\n' > "$WORK/tools/deep/tool"`,
		"move parent":  `mv "$WORK/tools" "$WORK/tools-old" && mkdir -p "$WORK/tools/deep" && printf '#!/bin/sh\necho evil\n' > "$WORK/tools/deep/tool"`,
		"move dir":     `mv "$WORK/tools/deep" "$WORK/tools/deep-old"`,
		"read state":   `cat "$WORK/state/record.json"`,
		"write state":  `echo x > "$WORK/state/new"`,
		"rename state": `mv "$WORK/state" "$WORK/state-old"`,
	}
	for name, script := range attacks {
		t.Run(name, func(t *testing.T) {
			r := runSh(t, tb.guardedSpec(Bwrap), script, tb.env()...)
			if r.code == 0 {
				t.Errorf("the attack succeeded (stdout %q)", r.stdout)
			}
		})
	}
	check := func(path, want string) {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s is now %q (%v), want %q", path, b, err, want)
		}
	}
	check(tb.Lock, `{"locked": true}`+"\n")
	check(tb.File, "sandbox = \"auto\"\n")
	check(tb.Bin, "#!/bin/sh\necho real\n")
	check(tb.State+"/record.json", "record\n")
	for _, p := range []string{"lock-link", "tools-old", "state-old", "tools/deep-old", "box-old"} {
		if _, err := os.Lstat(filepath.Join(tb.Work, p)); err == nil {
			t.Errorf("%s exists", p)
		}
	}
	// The twin: ordinary work in the same grant, next to protected files.
	r := runSh(t, tb.guardedSpec(Bwrap), `echo a > "$WORK/new" && echo b > "$WORK/tools/other" && mkdir "$WORK/tools/d2" && cat "$WORK/box/toolbox.lock.json" && rm "$WORK/new" && echo ok`, tb.env()...)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "ok\n") || !strings.Contains(r.stdout, "locked") {
		t.Fatalf("work in the grant: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// And without protection the same attack works: the test can see it.
	open := pin(tb.spec(Bwrap))
	r = runSh(t, open, `echo forged > "$WORK/box/toolbox.hcl"`, tb.env()...)
	if r.code != 0 {
		t.Fatalf("unprotected write: exit %d, %q", r.code, r.stderr)
	}
}

// Landlock cannot mask: a writable grant covering a protected path is
// refused at start, naming the grant and the file; so is any grant that
// covers the hidden state directory. Twin: a grant beside them works.
func TestProtectedPathsRefusedByLandlock(t *testing.T) {
	requireMechanism(t, Landlock)
	tb := newToolboxTree(t)
	spec := tb.guardedSpec(Landlock)
	spec.Hidden = nil
	_, err := Start(spec, Command{Path: "/bin/true"})
	r := wantRefusal(t, err, FieldWrite)
	if !strings.Contains(r.Reason, tb.Work) || !strings.Contains(r.Reason, "cannot mask") {
		t.Fatalf("reason %q does not name the grant and the file", r.Reason)
	}
	spec = tb.guardedSpec(Landlock)
	spec.Protected = nil
	spec.Write, spec.Read = nil, []string{tb.Work}
	_, err = Start(spec, Command{Path: "/bin/true"})
	if r := wantRefusal(t, err, FieldRead); !strings.Contains(r.Reason, tb.State) {
		t.Fatalf("reason %q does not name the state dir", r.Reason)
	}
	// A grant beside them.
	must(t, os.Mkdir(tb.Base+"/scratch", 0o777))
	spec = tb.guardedSpec(Landlock)
	spec.Write = []string{tb.Base + "/scratch"}
	res := runSh(t, spec, `echo x > "$S/f" && cat "$S/f"`, "S="+tb.Base+"/scratch")
	if res.code != 0 || res.stdout != "x\n" {
		t.Fatalf("grant beside: exit %d, %q, %q", res.code, res.stdout, res.stderr)
	}
	if err := spec.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := tb.guardedSpec(Landlock).Check(); err == nil {
		t.Fatal("Check accepted a grant over the lock")
	}
}

// Under both mechanisms a writable grant that is, or lies inside, a
// protected path is refused: nothing could mask it.
func TestWriteGrantInsideProtectedIsRefused(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tb := newToolboxTree(t)
			spec := tb.guardedSpec(m)
			spec.Protected = append(spec.Protected, tb.Work+"/tools")
			spec.Write = []string{tb.Work + "/tools/deep"}
			_, err := Start(spec, Command{Path: "/bin/true"})
			if r := wantRefusal(t, err, FieldWrite); !strings.Contains(r.Reason, "lies inside") {
				t.Fatalf("reason %q", r.Reason)
			}
			spec = tb.guardedSpec(m)
			spec.Write = []string{tb.Lock}
			_, err = Start(spec, Command{Path: "/bin/true"})
			wantRefusal(t, err, FieldWrite)
		})
	}
}

// toolbox's own executable (the landlock helper re-executes it) is always
// protected, even when the caller lists nothing.
func TestOwnExecutableAlwaysProtected(t *testing.T) {
	self := selfExecutable()
	if self == "" {
		t.Skip("no executable path")
	}
	spec := &Spec{Mechanism: Landlock, Write: []string{filepath.Dir(self)}}
	gs, err := spec.grants(nil)
	must(t, err)
	defer closeGrants(gs)
	if err := guardRefusal(Landlock, gs, spec.guardedPaths()); err == nil || !strings.Contains(err.Error(), self) {
		t.Fatalf("a grant over toolbox's executable: %v", err)
	}
}

// The landlock helper (and the limits wrapper and reaper of every other
// mechanism) is toolbox's own executable, re-executed at every start: a
// bwrap tool whose write grant covers its directory cannot replace it,
// not even by renaming a copy over it (a mount point cannot be renamed
// over), and landlock refuses such a grant (TestOwnExecutableAlwaysProtected).
// Twin: renaming one file over another in the same directory works.
func TestOwnExecutableMaskedByBwrap(t *testing.T) {
	requireMechanism(t, Bwrap)
	self := selfExecutable()
	if self == "" {
		t.Skip("no executable path")
	}
	dir := filepath.Dir(self)
	before, err := os.Stat(self)
	must(t, err)
	tr := newTree(t)
	// The grant holds the executable's directory (a grant directly holding
	// it is refused: TestProtectedFileDirectlyInWriteGrant).
	grant := filepath.Dir(dir)
	spec := pin(&Spec{Mechanism: Bwrap, ToolDir: tr.Tool, Write: []string{grant}})
	t.Cleanup(func() {
		for _, n := range []string{"evil", "twin-a", "twin-b"} {
			os.Remove(filepath.Join(dir, n))
			os.Remove(filepath.Join(grant, n))
		}
	})
	r := runSh(t, spec, `cp "$SELF" "$D/evil" && mv -f "$D/evil" "$SELF" && echo replaced`, "SELF="+self, "D="+dir)
	after, err := os.Stat(self)
	must(t, err)
	if r.code == 0 || strings.Contains(r.stdout, "replaced") || !os.SameFile(before, after) {
		t.Fatalf("toolbox's executable was replaced: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runSh(t, spec, `echo a > "$D/twin-a" && echo b > "$D/twin-b" && mv -f "$D/twin-b" "$D/twin-a" && cat "$D/twin-a"`, "D="+grant)
	if r.code != 0 || r.stdout != "b\n" {
		t.Fatalf("twin: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// Issue 10 (found after #2 was closed): a read-only mount on a protected
// file is dropped by the kernel when the host replaces the file by rename,
// which toolbox lock, installs and editors all do; a tool still running (a
// background command, a service) could then write the new lock. bwrap now
// masks the file's directory, which the host's rename leaves in place.
// The tool waits for the host to replace the lock, then tries to write
// it. Twin: the tool sees the new lock's content.
func TestProtectedFileStaysMaskedWhenTheHostReplacesIt(t *testing.T) {
	requireMechanism(t, Bwrap)
	tb := newToolboxTree(t)
	ready := filepath.Join(tb.Work, "ready")
	p, out, errb := startSh(t, tb.guardedSpec(Bwrap), `: > "$WORK/ready"
while [ ! -e "$WORK/go" ]; do sleep 0.05; done
cat "$WORK/box/toolbox.lock.json"
echo forged > "$WORK/box/toolbox.lock.json" && echo wrote-lock
echo forged > "$WORK/box/new" && echo wrote-beside`, tb.env()...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			p.Signal(syscall.SIGKILL)
			t.Fatal("the tool did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// What toolbox lock does: write a new file, rename it over the lock.
	must(t, os.WriteFile(tb.Lock+".new", []byte(`{"relocked": true}`+"\n"), 0o644))
	must(t, os.Rename(tb.Lock+".new", tb.Lock))
	must(t, os.WriteFile(filepath.Join(tb.Work, "go"), nil, 0o644))
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "wrote") {
		t.Errorf("the tool wrote after the host replaced the lock: %q (stderr %q)", out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "relocked") {
		t.Errorf("the tool does not see the new lock: %q (stderr %q)", out.String(), errb.String())
	}
	if b, _ := os.ReadFile(tb.Lock); string(b) != `{"relocked": true}`+"\n" {
		t.Errorf("the lock is now %q", b)
	}
}

// bwrap masks a protected file through its directory, which cannot be
// the writable grant itself: such a grant is refused, naming the grant and
// the file, with the fix. Twin: the same file one directory down is masked
// (TestProtectedPathsMaskedByBwrap), and a read grant holding it directly
// is fine (read-only anyway).
func TestProtectedFileDirectlyInWriteGrant(t *testing.T) {
	requireMechanism(t, Bwrap)
	tb := newToolboxTree(t)
	spec := tb.guardedSpec(Bwrap)
	spec.Write = []string{tb.Work + "/box"}
	_, err := Start(spec, Command{Path: "/bin/true"})
	r := wantRefusal(t, err, FieldWrite)
	if !strings.Contains(r.Reason, tb.Lock) && !strings.Contains(r.Reason, tb.File) || !strings.Contains(r.Reason, "rename") {
		t.Fatalf("reason %q does not name the file and why", r.Reason)
	}
	spec = tb.guardedSpec(Bwrap)
	spec.Write, spec.Read = nil, []string{tb.Work + "/box"}
	if res := runSh(t, spec, `cat "$B/toolbox.hcl"`, "B="+tb.Work+"/box"); res.code != 0 || !strings.Contains(res.stdout, "sandbox") {
		t.Fatalf("read grant: exit %d, %q, %q", res.code, res.stdout, res.stderr)
	}
}

// bwrap hides a file (serve's MCP token file) only by covering its
// directory, which cannot be a grant itself, even a read-only one: such a
// grant is refused, naming the file and why. Twin: a read grant one
// directory up starts, and the tool cannot read the file.
func TestHiddenFileDirectlyInGrant(t *testing.T) {
	requireMechanism(t, Bwrap)
	tb := newToolboxTree(t)
	dir := tb.Work + "/secrets"
	must(t, os.Mkdir(dir, 0o755))
	token := dir + "/token"
	must(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))
	spec := tb.guardedSpec(Bwrap)
	spec.Hidden = append(spec.Hidden, token)
	spec.Read = []string{dir}
	_, err := Start(spec, Command{Path: "/bin/true"})
	r := wantRefusal(t, err, FieldRead)
	if !strings.Contains(r.Reason, token) || !strings.Contains(r.Reason, "covering its directory") {
		t.Fatalf("reason %q does not name the file and why", r.Reason)
	}
	spec = tb.guardedSpec(Bwrap)
	spec.Hidden = append(spec.Hidden, token)
	spec.Read = []string{tb.Work}
	res := runSh(t, spec, `cat "$T"; echo "exit $?"`, "T="+token)
	if strings.Contains(res.stdout, "s3cret") || !strings.Contains(res.stdout, "exit ") {
		t.Fatalf("read grant above the hidden file: exit %d, %q, %q", res.code, res.stdout, res.stderr)
	}
}
