package manifest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// The lock is written atomically (DESIGN.md §4) by internal/atomicfile,
// whose tests cover the mechanism; this checks that Write goes through it,
// with a real fault that holds for root too: a full disk.

// A write that fails half-way (the disk filled up) leaves the old lock
// byte for byte, no temporary file, and says why.
func TestWriteThatFailsHalfWayLeavesTheOldLock(t *testing.T) {
	dir := testenv.Tmpfs(t, 256<<10)
	path := filepath.Join(dir, "toolbox.lock.json")
	old := mustMarshal(t, testLock())
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	l := testLock()
	l.Tools["read_file"].Describe.Description = strings.Repeat("x", 1<<20) // more than the disk holds
	err := Write(path, l)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "writing lock") {
		t.Fatalf("write on a full disk = %v, want ENOSPC saying it was writing the lock", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
		t.Errorf("the old lock changed: %d bytes, want its %d", len(got), len(old))
	}
	if left := tempFiles(t, dir); left != nil {
		t.Errorf("temporary files left: %q", left)
	}
	// Positive twin: the same write of a lock that fits.
	l = testLock()
	l.Capabilities["search"].Description = "Search the code, changed."
	if err := Write(path, l); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, mustMarshal(t, l)) {
		t.Error("the new lock was not written")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("the lock has mode %#o, want 0644", fi.Mode().Perm())
	}
}
