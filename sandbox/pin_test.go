package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pinnedCopy copies the bubblewrap Detect found into a directory of the
// test and pins the copy.
func pinnedCopy(t *testing.T) (*BwrapPin, string) {
	t.Helper()
	requireMechanism(t, Bwrap)
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755))
	p := filepath.Join(dir, "bwrap")
	copyFile(t, Detect().BwrapPin.Path, p, 0o755)
	return &BwrapPin{Path: p, SHA256: Detect().BwrapPin.SHA256}, dir
}

// Issue 10 #7: bwrap was looked up on PATH at every run, so `PATH=evil:$PATH
// toolbox run` ran an impostor that confines nothing. Now a run executes
// exactly the pinned file: a fake bwrap first on PATH changes nothing.
func TestPinnedBwrapIgnoresPath(t *testing.T) {
	requireMechanism(t, Bwrap)
	evil := t.TempDir()
	must(t, os.WriteFile(filepath.Join(evil, "bwrap"), []byte("#!/bin/sh\necho impostor\n"), 0o755))
	t.Setenv("PATH", evil+":"+os.Getenv("PATH"))
	r := runSh(t, pin(&Spec{Mechanism: Bwrap}), `echo confined`)
	if r.stdout != "confined\n" {
		t.Fatalf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
	// FindBwrap (lock time) does search PATH, and would pin the impostor:
	// which is why a run never calls it.
	if p, err := FindBwrap(); err != nil || p.Path != filepath.Join(evil, "bwrap") {
		t.Fatalf("FindBwrap = %+v, %v", p, err)
	}
}

// A bwrap changed since the lock (an upgrade, or a replacement) is refused
// with the fix; so is a missing pin, and a pinned path that became a
// symlink. Twin: the pinned copy runs.
func TestPinnedBwrapChecked(t *testing.T) {
	good, dir := pinnedCopy(t)
	r := runSh(t, &Spec{Mechanism: Bwrap, Bwrap: good}, `echo ok`)
	if r.stdout != "ok\n" {
		t.Fatalf("pinned copy: %q, %q", r.stdout, r.stderr)
	}
	_, err := Start(&Spec{Mechanism: Bwrap}, Command{Path: "/bin/true"})
	if rf := wantRefusal(t, err, FieldSandbox); !strings.Contains(rf.Fix, "toolbox lock") {
		t.Fatalf("no pin: fix %q", rf.Fix)
	}
	changed := &BwrapPin{Path: good.Path, SHA256: strings.Repeat("0", 64)}
	_, err = Start(&Spec{Mechanism: Bwrap, Bwrap: changed}, Command{Path: "/bin/true"})
	if rf := wantRefusal(t, err, FieldSandbox); !strings.Contains(rf.Reason, "changed since the lock") || !strings.Contains(rf.Fix, "toolbox lock") {
		t.Fatalf("changed: %+v", rf)
	}
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(good.Path, link))
	_, err = Start(&Spec{Mechanism: Bwrap, Bwrap: &BwrapPin{Path: link, SHA256: good.SHA256}}, Command{Path: "/bin/true"})
	wantRefusal(t, err, FieldSandbox)
}

// The pinned bwrap runs from the descriptor its hash was checked on:
// swapping the file once the command is built changes nothing.
func TestPinnedBwrapRunsCheckedDescriptor(t *testing.T) {
	good, _ := pinnedCopy(t)
	cmd, release, err := Cmd(&Spec{Mechanism: Bwrap, Bwrap: good}, Command{Path: "/bin/echo", Args: []string{"confined"}, Env: []string{}})
	must(t, err)
	defer release()
	swapIn(t, good.Path, "#!/bin/sh\necho impostor\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "confined\n" {
		t.Fatalf("ran %q, %v", out, err)
	}
	if !strings.HasPrefix(cmd.Path, "/proc/self/fd/") {
		t.Fatalf("bwrap executed by path %q", cmd.Path)
	}
}
