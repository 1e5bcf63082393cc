package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/internal/seccompasm"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// The shared tmp's size bound (DESIGN.md §6, D6). Everything here runs as
// root, where toolbox mounts a tmpfs on the shared tmp.

const smallTmp = 8 << 20

// Issue 10, limits: tmp: shared (the default) was a host directory, and a
// tool wrote 5 files of 200 MiB into it (file_size bounds each file, not
// their sum). Now it is a tmpfs of the toolbox's tmp_size: writing 3 files
// of 3 MiB into an 8 MiB one fails with ENOSPC, under both mechanisms.
func TestSharedTmpSizeBound(t *testing.T) {
	eachBounded(t, func(t *testing.T, m Mechanism, dir string) {
		spec := pin(&Spec{Mechanism: m, SharedTmp: dir, SharedTmpSize: smallTmp})
		r := runSh(t, spec, `for i in 1 2 3; do head -c 3145728 /dev/zero > "$TMPDIR/f$i" || { echo "fail $i"; exit 0; }; echo "ok $i"; done`)
		if r.stdout != "ok 1\nok 2\nfail 3\n" || !strings.Contains(r.stderr, "No space left on device") {
			t.Fatalf("3 files of 3 MiB into an 8 MiB shared tmp: stdout %q, stderr %q; want the third to fail with ENOSPC", r.stdout, r.stderr)
		}
	})
}

// eachBounded runs f as a subtest for each sandboxed mechanism, as root,
// with the shared tmp dir of a fresh toolbox mounted as a tmpfs of
// smallTmp bytes.
func eachBounded(t *testing.T, f func(t *testing.T, m Mechanism, dir string)) {
	requireRoot(t)
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			dir, mounted := sharedTmpSized(t, smallTmp)
			if mounted != smallTmp {
				t.Fatalf("SharedTmpDir mounted %d bytes as root, want %d", mounted, smallTmp)
			}
			f(t, m, dir)
		})
	}
}

// Twin: writes within the size succeed, and a later call of another tool
// (the other mechanism) sees them: the bounded tmp is still shared.
func TestSharedTmpSizeWithinBound(t *testing.T) {
	requireRoot(t)
	requireMechanism(t, Bwrap)
	requireMechanism(t, Landlock)
	dir, mounted := sharedTmpSized(t, smallTmp)
	w := runSh(t, pin(&Spec{Mechanism: Bwrap, SharedTmp: dir, SharedTmpSize: mounted}),
		`head -c 3145728 /dev/zero > /tmp/a && head -c 3145728 /dev/zero > /tmp/b && echo wrote`)
	if w.stdout != "wrote\n" {
		t.Fatalf("6 MiB into an 8 MiB shared tmp: stdout %q, stderr %q", w.stdout, w.stderr)
	}
	r := runSh(t, &Spec{Mechanism: Landlock, SharedTmp: dir, SharedTmpSize: mounted}, `wc -c < "$TMPDIR/a"; wc -c < "$TMPDIR/b"`)
	if r.stdout != "3145728\n3145728\n" {
		t.Fatalf("another tool read: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// A sandboxed tool, even one running as root, cannot unmount the shared
// tmpfs to write to the directory beneath, nor mount over it: the kernel
// refuses (no CAP_SYS_ADMIN under bwrap, a Landlock domain) and the
// seccomp filter refuses every mount call first (umount2 with flags the
// kernel would reject as EINVAL before any privilege check shows it). The
// mount is still there afterwards. Twin: unsandboxed, those flags give
// EINVAL (so EPERM above is the filter's).
func TestSharedTmpCannotBeUnmounted(t *testing.T) {
	eachBounded(t, func(t *testing.T, m Mechanism, dir string) {
		inside := dir
		if m == Bwrap {
			inside = "/tmp"
		}
		probeUnder(t, &Spec{Mechanism: m, SharedTmp: dir, SharedTmpSize: smallTmp}, []expect{
			{"umount2:" + inside, "EPERM"}, {"umount2:" + inside + ":badflags", "EPERM"},
			{"mount-tmpfs:" + inside, "EPERM"}, {"fsopen", "EPERM"}, {"move-tmp:" + inside, "EPERM"},
		})
		if err := checkMounted(dir, smallTmp); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("none-twin", func(t *testing.T) {
		probeUnder(t, &Spec{}, []expect{{"umount2:/nonexistent:badflags", "EINVAL"}})
	})
}

// Every mount call is in the tools' seccomp filter.
func TestSeccompDeniesMountCalls(t *testing.T) {
	info, err := arch.GetInfo("")
	must(t, err)
	names := map[string]bool{}
	for _, p := range seccompasm.ToolPolicies(seccompasm.Rules{}, info) {
		for _, g := range p.Syscalls {
			for _, n := range g.Names {
				names[n] = true
			}
		}
	}
	for _, n := range []string{"mount", "umount2", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "mount_setattr", "pivot_root"} {
		if !names[n] {
			t.Errorf("the tools' seccomp filter allows %s", n)
		}
	}
}

// checkMounted says whether dir is the root of a tmpfs of size bytes.
func checkMounted(dir string, size uint64) error {
	pfd, err := unix.Open(filepath.Dir(dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return checkSharedTmpMount(pfd, fd, dir, size)
}

// mountsOn counts the mounts on dir in /proc/self/mountinfo.
func mountsOn(t testing.TB, dir string) int {
	t.Helper()
	mps, err := testenv.MountsUnder(dir)
	must(t, err)
	return len(mps)
}

// A symlink planted where the shared tmp goes is refused, and nothing is
// mounted on its target. Twin: removed, the directory is made and
// mounted.
func TestSharedTmpMountSymlinkRefused(t *testing.T) {
	requireRoot(t)
	lock := filepath.Join(t.TempDir(), "toolbox.lock.json")
	dir, err := SharedTmpPath(lock)
	must(t, err)
	target := t.TempDir()
	must(t, os.MkdirAll(filepath.Dir(dir), 0o711))
	must(t, os.Chmod(filepath.Dir(dir), 0o711))
	must(t, os.Symlink(target, dir))
	t.Cleanup(func() {
		_ = testenv.DetachMounts(target)
		_ = testenv.DetachMounts(dir)
		os.RemoveAll(dir)
	})
	if _, _, err := SharedTmpDir(lock, smallTmp); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a symlink at the shared tmp: %v, want a refusal", err)
	}
	if n := mountsOn(t, target); n != 0 {
		t.Fatalf("%d mounts on the symlink's target", n)
	}
	must(t, os.Remove(dir))
	if _, mounted, err := SharedTmpDir(lock, smallTmp); err != nil || mounted != smallTmp {
		t.Fatalf("after removing the symlink: mounted %d, %v", mounted, err)
	}
	if n := mountsOn(t, dir); n != 1 {
		t.Fatalf("%d mounts on the shared tmp, want 1", n)
	}
}

// Two toolbox processes using one shared tmp for the first time at once
// stack no two mounts (the flock on its parent): exactly one mount, also
// after more uses.
func TestSharedTmpConcurrentFirstUse(t *testing.T) {
	requireRoot(t)
	lock := filepath.Join(t.TempDir(), "toolbox.lock.json")
	dir, err := SharedTmpPath(lock)
	must(t, err)
	t.Cleanup(func() { _ = testenv.DetachMounts(dir); os.RemoveAll(dir) })
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, _, errs[i] = SharedTmpDir(lock, smallTmp)
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		must(t, err)
	}
	if got := mountsOn(t, dir); got != 1 {
		t.Fatalf("%d concurrent first uses made %d mounts, want 1", n, got)
	}
}

// A size change in the lock remounts the shared tmp at the new size,
// keeping its files; shrinking it below what it holds is refused, naming
// the directory and the fix; a tmpfs someone unmounted is mounted again,
// and Start refuses a shared tmp that is not the tmpfs of the size it was
// given (unmounted after SharedTmpDir).
func TestSharedTmpResize(t *testing.T) {
	requireRoot(t)
	lock := filepath.Join(t.TempDir(), "toolbox.lock.json")
	dir, _, err := SharedTmpDir(lock, smallTmp)
	must(t, err)
	t.Cleanup(func() { _ = testenv.DetachMounts(dir); os.RemoveAll(dir) })
	must(t, os.WriteFile(filepath.Join(dir, "keep"), make([]byte, 3<<20), 0o644))
	if _, mounted, err := SharedTmpDir(lock, 16<<20); err != nil || mounted != 16<<20 {
		t.Fatalf("growing: %d, %v", mounted, err)
	}
	must(t, checkMounted(dir, 16<<20))
	if mountsOn(t, dir) != 1 {
		t.Fatal("growing stacked a second mount")
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Fatalf("growing lost the files: %v", err)
	}
	_, _, err = SharedTmpDir(lock, 1<<20)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "tmp_size") {
		t.Fatalf("shrinking below what it holds: %v, want a refusal naming %s and the fix", err, dir)
	}
	must(t, checkMounted(dir, 16<<20))
	if _, mounted, err := SharedTmpDir(lock, 4<<20); err != nil || mounted != 4<<20 {
		t.Fatalf("shrinking above what it holds: %d, %v", mounted, err)
	}
	must(t, checkMounted(dir, 4<<20))

	must(t, unix.Unmount(dir, unix.MNT_DETACH))
	for _, m := range sandboxed {
		requireMechanism(t, m)
		_, err := Start(pin(&Spec{Mechanism: m, SharedTmp: dir, SharedTmpSize: 4 << 20}), Command{Path: "/bin/true"})
		if r := wantRefusal(t, err, FieldTmp); !strings.Contains(r.Error(), "not the tmpfs") {
			t.Errorf("%s: %v", m, r)
		}
	}
	if _, mounted, err := SharedTmpDir(lock, 4<<20); err != nil || mounted != 4<<20 {
		t.Fatalf("after an unmount: %d, %v", mounted, err)
	}
	if got := mountsOn(t, dir); got != 1 {
		t.Fatalf("%d mounts after remounting, want 1", got)
	}
}

// The exposure report's tmp_size row for a tool given the shared tmp:
// enforced when toolbox mounted its tmpfs (as root), naming the size and
// that it is shared; otherwise not enforced, saying why. Twin: a private
// bwrap /tmp is enforced by its own tmpfs.
func TestSharedTmpExposure(t *testing.T) {
	l := Limits{TmpSize: 256 << 20}
	row := func(m Mechanism, shared *sharedTmpBound) LimitExposure {
		for _, le := range l.exposure(m, 0, CgroupSupport{}, shared) {
			if le.Limit == "tmp_size" {
				return le
			}
		}
		t.Fatal("no tmp_size row")
		return LimitExposure{}
	}
	for _, m := range sandboxed {
		le := row(m, &sharedTmpBound{size: smallTmp})
		if !le.Enforced || !strings.Contains(le.How, "a tmpfs of 8MiB shared by the toolbox's tools") {
			t.Errorf("%s, mounted: %+v", m, le)
		}
		le = row(m, &sharedTmpBound{})
		why := "only root can mount the tmpfs that bounds it"
		if os.Geteuid() == 0 {
			why = "the toolbox-wide tmp_size is unlimited, or toolbox may not mount here"
		}
		if le.Enforced || !strings.Contains(le.How, "not its tmp: the toolbox's shared directory on the host's disk") || !strings.Contains(le.How, why) {
			t.Errorf("%s, a plain directory: %+v", m, le)
		}
	}
	if le := row(Bwrap, nil); !le.Enforced || le.Value != "256MiB" {
		t.Errorf("bwrap, private /tmp: %+v", le)
	}
}
