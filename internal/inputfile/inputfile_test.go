package inputfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// TestReadFileRefusesWhatIsNotAFile: a FIFO without a writer, /dev/zero
// and a directory are refused at once, before a byte is read; a regular
// file within the limit is read whole (the positive twin).
func TestReadFileRefusesWhatIsNotAFile(t *testing.T) {
	fifo := testenv.FIFO(t, "fifo")
	dir := filepath.Dir(fifo)
	for _, path := range []string{fifo, "/dev/zero", dir} {
		err := testenv.Unblocked(t, fifo, func() error { _, err := ReadFile(path, 1<<20); return err })
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(%q) = %v, want ErrNotRegular", path, err)
		}
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(ok, 5); err != nil || string(data) != "hello" {
		t.Errorf("ReadFile(ok, 5) = %q, %v", data, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestReadLimits: one byte over the limit is a *TooLargeError, from a file
// and from a stream that never ends.
func TestReadLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, []byte("123456"), 0o600); err != nil {
		t.Fatal(err)
	}
	var tl *TooLargeError
	if _, err := ReadFile(path, 5); !errors.As(err, &tl) || tl.Size != 6 || tl.Max != 5 {
		t.Errorf("ReadFile over the limit = %v", err)
	}
	endless := strings.NewReader(strings.Repeat("x", 1<<20))
	if _, err := ReadAll(endless, 1000, "stdin"); !errors.As(err, &tl) || !strings.Contains(err.Error(), "stdin is longer than the 1000 bytes") {
		t.Errorf("ReadAll over the limit = %v", err)
	}
	if data, err := ReadAll(strings.NewReader("abc"), 3, "stdin"); err != nil || string(data) != "abc" {
		t.Errorf("ReadAll at the limit = %q, %v", data, err)
	}
}
