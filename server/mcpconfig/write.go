package mcpconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/toolbox-dev/toolbox/internal/atomicfile"
	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// MaxFileBytes is the largest client file Write reads (16 MiB); a larger
// one is refused with an *inputfile.TooLargeError and left as it is.
const MaxFileBytes = 16 << 20

// Written says what Write did.
type Written struct {
	// File is the file written: the path given, or the file a symbolic
	// link there points to (the link is kept).
	File string
	// Backup is the copy of the file as it was, "" when there was no file
	// or nothing changed.
	Backup string
	// Unchanged says the file already held the entry as it is: nothing
	// was written.
	Unchanged bool
}

// Write merges s into the client's file at path (Merge), keeping a copy
// of the file as it was beside it (path.toolbox-backup-YYYYMMDDTHHMMSSZ,
// with the file's mode) and replacing the file atomically: a temporary
// file in the same directory, synced, renamed over it. A missing file is
// created (mode 0644) with its directory; a file that cannot be read is
// refused with a *ParseError and left as it is, as is anything that is not
// a regular file (a FIFO is refused, not waited on) or is larger than
// MaxFileBytes.
func Write(path string, c Client, s Server, now time.Time) (Written, error) {
	w := Written{File: path}
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		if w.File, err = filepath.EvalSymlinks(path); err != nil {
			return w, fmt.Errorf("following the link %q: %w", path, err)
		}
	}
	// inputfile refuses a FIFO or a device before reading: os.ReadFile
	// would block on a FIFO forever.
	return merge(w, inputfile.ReadFile, c, s, now)
}

// merge is Write once w.File is the file to merge into, read by read.
func merge(w Written, read func(string, int64) ([]byte, error), c Client, s Server, now time.Time) (Written, error) {
	mode := fs.FileMode(0o644)
	existing, err := read(w.File, MaxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		existing = nil
	case err != nil:
		return w, fmt.Errorf("reading %q: %w", w.File, err)
	default:
		st, err := os.Lstat(w.File) // Write resolved a link; WriteInWorkspace refused one
		if err != nil {
			return w, err
		}
		mode = st.Mode().Perm()
	}
	merged, err := Merge(c, existing, s)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = w.File
		}
		return w, err
	}
	if existing != nil && bytes.Equal(merged, existing) {
		w.Unchanged = true
		return w, nil
	}
	dir := filepath.Dir(w.File)
	if existing != nil {
		if w.Backup, err = backup(w.File, existing, mode, now); err != nil {
			return w, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return w, fmt.Errorf("creating %q: %w", dir, err)
	}
	if err := atomicfile.WriteRegular(w.File, merged, mode); err != nil {
		return w, fmt.Errorf("writing %q: %w", w.File, err)
	}
	return w, nil
}

// backup writes data to a new file beside path named after now (a number
// appended when that name is taken), with mode.
func backup(path string, data []byte, mode fs.FileMode, now time.Time) (string, error) {
	base := path + ".toolbox-backup-" + now.UTC().Format("20060102T150405Z")
	for n := 1; ; n++ {
		name := base
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) && n < 100 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backing up %q: %w", path, err)
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("backing up %q: %w", path, err)
		}
		return name, nil
	}
}
