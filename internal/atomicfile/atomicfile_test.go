package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// leftovers returns the names in dir other than keep: temporary files a
// write failed to remove.
func leftovers(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.Contains(strings.Join(keep, "\x00")+"\x00", e.Name()+"\x00") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A disk that fills up half-way through the write (a real one: a small
// tmpfs) leaves the old file byte for byte and no temporary file, and the
// error names the file and says why.
func TestFullDiskLeavesTheOldFile(t *testing.T) {
	dir := testenv.Tmpfs(t, 64<<10)
	path := filepath.Join(dir, "toolbox.lock.json")
	old := []byte("the old file\n")
	if err := Write(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(string, []byte, fs.FileMode) error{"Write": Write, "WriteRegular": WriteRegular} {
		err := f(path, bytes.Repeat([]byte("x"), 1<<20), 0o644)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s on a full disk = %v, want ENOSPC", name, err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: the error %q does not name %s", name, err, path)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
			t.Errorf("%s: the old file changed: %q", name, got)
		}
		if left := leftovers(t, dir, "toolbox.lock.json"); left != nil {
			t.Errorf("%s: temporary files left: %q", name, left)
		}
	}
	// Create on a full disk leaves nothing either.
	err := Create(filepath.Join(dir, "new"), bytes.Repeat([]byte("x"), 1<<20), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Create on a full disk = %v, want ENOSPC", err)
	}
	if left := leftovers(t, dir, "toolbox.lock.json"); left != nil {
		t.Errorf("Create: files left: %q", left)
	}
	// Positive twin: a write that fits replaces the file.
	if err := Write(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("after a write that fits: %q", got)
	}
}

// The same guarantee with the fault injected (no root needed): the write
// fails after half the data.
func TestFailedWriteLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	full := func(f *os.File, b []byte) (int, error) {
		n, err := f.Write(b[:len(b)/2])
		if err != nil {
			return n, err
		}
		return n, syscall.ENOSPC
	}
	for _, h := range []how{replace, replaceRegular, create} {
		err := write(path, []byte("new data"), 0o644, h, full)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("how %d: %v, want ENOSPC", h, err)
		}
		if got, _ := os.ReadFile(path); string(got) != "old" {
			t.Errorf("how %d: the old file changed: %q", h, got)
		}
		if left := leftovers(t, dir, "f"); left != nil {
			t.Errorf("how %d: temporary files left: %q", h, left)
		}
	}
}

// The mode is set exactly as asked, whatever the umask and whatever the
// replaced file had; a caller that keeps a file's mode passes it back.
func TestModeIsSet(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, perm := range []fs.FileMode{0o666, 0o600, 0o640, 0o755} { // 0666: the umask (022 at least) would take bits away
		if err := Write(path, []byte("x"), perm); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != perm {
			t.Errorf("Write with %#o made mode %#o", perm, fi.Mode().Perm())
		}
	}
	c := filepath.Join(dir, "c")
	if err := Create(c, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(c); fi.Mode().Perm() != 0o600 {
		t.Errorf("Create with 0600 made mode %#o", fi.Mode().Perm())
	}
}

// Write replaces a symbolic link at the target, never the file it points
// to (the link's target could be anywhere).
func TestWriteDoesNotFollowALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "f")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the link's target was written: %q", got)
	}
	if fi, _ := os.Lstat(link); !fi.Mode().IsRegular() {
		t.Errorf("the link is still there: %v", fi.Mode())
	}
}

// WriteRegular refuses to replace a FIFO (or a link) and leaves it; it
// replaces a regular file and creates a missing one (the positive twins).
func TestWriteRegularRefusesAFIFO(t *testing.T) {
	fifo := testenv.FIFO(t, "mcp.json")
	err := WriteRegular(fifo, []byte("{}"), 0o644)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
		t.Fatalf("WriteRegular over a FIFO = %v, want ErrNotRegular naming it", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v", err)
	}
	if left := leftovers(t, filepath.Dir(fifo), "mcp.json"); left != nil {
		t.Errorf("temporary files left: %q", left)
	}
	dir := filepath.Dir(fifo)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteRegular(link, []byte("{}"), 0o644); !errors.Is(err, ErrNotRegular) {
		t.Errorf("WriteRegular over a link = %v, want ErrNotRegular", err)
	}
	for _, name := range []string{"new.json", "new.json"} { // created, then replaced
		p := filepath.Join(dir, name)
		if err := WriteRegular(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != name {
			t.Errorf("%s holds %q", name, got)
		}
	}
}

// Create never replaces: a file already there is kept and the error is
// fs.ErrExist; of many concurrent Creates exactly one wins.
func TestCreateNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Create(path, []byte("ours"), 0o600); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("Create over a file = %v, want fs.ErrExist naming it", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "theirs" {
		t.Errorf("the file was replaced: %q", got)
	}
	if left := leftovers(t, dir, "token"); left != nil {
		t.Errorf("temporary files left: %q", left)
	}
	os.Remove(path)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Create(path, []byte{byte('a' + i)}, 0o600)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, fs.ErrExist):
				t.Errorf("Create: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d concurrent Creates succeeded, want 1", won)
	}
	if left := leftovers(t, dir, "token"); left != nil {
		t.Errorf("temporary files left: %q", left)
	}
}

// A missing directory is an error naming the file, not a file elsewhere.
func TestMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "f")
	err := Write(path, []byte("x"), 0o644)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("Write into a missing directory = %v, want ErrNotExist naming %s", err, path)
	}
}

// A reader never sees a file in between: while contents of two sizes
// replace each other, every read is one of them whole (an in-place write
// would show an empty or cut file).
func TestReadersNeverSeeAPartialFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolbox.lock.json")
	small, big := []byte("small\n"), bytes.Repeat([]byte("big "), 1<<18) // a write that takes a while
	if err := os.WriteFile(path, small, 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var bad, reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			got, err := os.ReadFile(path)
			reads.Add(1)
			if err != nil || !bytes.Equal(got, small) && !bytes.Equal(got, big) {
				bad.Add(1)
			}
		}
	}()
	for i := range 100 {
		data := small
		if i%2 == 0 {
			data = big
		}
		if err := Write(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Errorf("%d of %d reads saw a file that was neither the old one nor the new one", n, reads.Load())
	}
}
