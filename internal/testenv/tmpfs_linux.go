package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Tmpfs mounts a new tmpfs of size bytes (rounded up to whole pages by the
// kernel) on a new temporary directory and returns that directory; it is
// unmounted when the test ends. Filling it is how a test makes a real
// "no space left on device" (ENOSPC) that holds for root too. It needs
// root: without it the test is skipped (a failure when Required).
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root to mount a tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := syscall.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", dir, err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+strconv.FormatInt(size, 10)); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs on %s: %v", dir, err)
		}
	})
	return dir
}
