package manifest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// The lock is written atomically (DESIGN.md §4), checked with faults that
// hold for root too (CI runs as root, which ignores a read-only directory).

// A write that fails half-way (the disk filled up) leaves the old lock
// byte for byte, no temporary file, and says why.
func TestWriteThatFailsHalfWayLeavesTheOldLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolbox.lock.json")
	old := mustMarshal(t, testLock())
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	l := testLock()
	l.Capabilities["search"].Description = "Search the code, changed."
	data := mustMarshal(t, l)
	full := func(f *os.File, b []byte) (int, error) {
		n, err := f.Write(b[:len(b)/2])
		if err != nil {
			return n, err
		}
		return n, syscall.ENOSPC
	}
	err := writeAtomicWith(path, data, 0o644, full)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk = %v, want ENOSPC", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
		t.Errorf("the old lock changed: %d bytes, want its %d", len(got), len(old))
	}
	if left := tempFiles(t, dir); left != nil {
		t.Errorf("temporary files left: %q", left)
	}
	// Positive twin: the same write with a disk that has room.
	if err := writeAtomicWith(path, data, 0o644, (*os.File).Write); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Error("the new lock was not written")
	}
}

// A reader never sees a lock in between: while locks of two sizes replace
// each other, every read is one of them whole (an in-place write would
// show an empty or cut file).
func TestReadersNeverSeeAPartialLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolbox.lock.json")
	small, big := testLock(), testLock()
	big.Tools["read_file"].Describe.Description = strings.Repeat("x", 1<<20) // a write that takes a while
	smallData, bigData := mustMarshal(t, small), mustMarshal(t, big)
	if err := os.WriteFile(path, smallData, 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Int64
	var reads atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			got, err := os.ReadFile(path)
			reads.Add(1)
			if err != nil || !bytes.Equal(got, smallData) && !bytes.Equal(got, bigData) {
				bad.Add(1)
			}
		}
	}()
	for i := range 100 {
		data := smallData
		if i%2 == 0 {
			data = bigData
		}
		if err := writeFileAtomic(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Errorf("%d of %d reads saw a lock that was neither the old one nor the new one", n, reads.Load())
	}
}
