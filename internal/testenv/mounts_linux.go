package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Tests run as root, and as root toolbox mounts a tmpfs on every shared
// tmp it makes (under os.TempDir(), DESIGN.md §6, D6). A test binary that
// makes shared tmps calls RunWithTmp from its TestMain, and scripts detach
// theirs with DetachMounts, so that no test leaves a mount on the machine.

// RunWithTmp runs m with TMPDIR set to a fresh directory of its own, mode
// 1777 as /tmp (so
// that os.TempDir(), t.TempDir() and the shared tmps toolbox makes all lie
// there), then detaches every mount under that directory and removes it.
// Tests run tools as nobody, which must reach that directory: it is made
// in the caller's TMPDIR when every directory on its path is searchable
// by all, else in /tmp (a private TMPDIR, such as mktemp -d makes, is
// left alone). It returns m.Run's exit code, or 1 when the directory
// cannot be made or cleaned up (saying why on stderr). Call it last in
// TestMain: os.Exit(testenv.RunWithTmp(m)).
func RunWithTmp(m interface{ Run() int }) int {
	base := os.TempDir()
	if !SearchableByAll(base) {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "toolbox-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "making the test's TMPDIR: %v\n", err)
		return 1
	}
	// Like /tmp: tests run tools as nobody, which must reach it.
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		fmt.Fprintf(os.Stderr, "making the test's TMPDIR: %v\n", err)
		return 1
	}
	if err := os.Setenv("TMPDIR", dir); err != nil {
		fmt.Fprintf(os.Stderr, "setting TMPDIR: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := DetachMounts(dir); err != nil {
		fmt.Fprintf(os.Stderr, "cleaning up the test's TMPDIR: %v\n", err)
		code = 1
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "removing the test's TMPDIR: %v\n", err)
		code = 1
	}
	return code
}

// SearchableByAll reports whether every directory from / to dir grants
// search (x) to others, so that any user (nobody) can reach what lies
// in dir.
func SearchableByAll(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// DetachMounts detaches (umount2 with MNT_DETACH) every mount whose mount
// point is dir or lies under it, as /proc/self/mountinfo lists them,
// deepest first and each stacked mount in turn, until none is left. dir
// must be a test's own directory: nothing outside it is touched. Not
// being allowed to unmount (not root) is not an error when nothing is
// mounted there.
func DetachMounts(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("resolving %q: %w", dir, err)
	}
	for range 64 {
		mps, err := MountsUnder(real)
		if err != nil || len(mps) == 0 {
			return err
		}
		// Deepest first: a mount inside another goes before it.
		slices.SortFunc(mps, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, mp := range mps {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
				return fmt.Errorf("detaching the mount on %q: %w", mp, err)
			}
		}
	}
	return fmt.Errorf("mounts under %q remain after 64 rounds of detaching", dir)
}

// MountsUnder lists the mount points of /proc/self/mountinfo that are dir
// (absolute, symlinks resolved) or lie under it, once per mount (a
// stacked mount point is listed as often as it is mounted on).
func MountsUnder(dir string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ...
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out, sc.Err()
}

// unescapeMountinfo decodes mountinfo's octal escapes (\040 for a space,
// \011, \012, \134).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// OpenDir makes a fresh directory in os.TempDir() whose name starts with
// prefix, mode 0755 (searchable by all, as the tests' TMPDIR of
// RunWithTmp is), and removes it when t ends. Its path is short: the
// TMPDIR and about 12 bytes.
func OpenDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
