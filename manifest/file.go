package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/toolbox-dev/toolbox/internal/atomicfile"
	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// LockPath returns the lock file that belongs to a toolbox file: beside it,
// "x.hcl" becoming "x.lock.json". A name with any other extension (or none)
// gets ".lock.json" appended: "x.toolbox" gives "x.toolbox.lock.json".
func LockPath(toolboxFile string) string {
	// A file named just ".hcl" has no stem to keep.
	if base, ok := strings.CutSuffix(toolboxFile, ".hcl"); ok && filepath.Base(toolboxFile) != ".hcl" {
		return base + ".lock.json"
	}
	return toolboxFile + ".lock.json"
}

// Platform is the platform a lock records for its binaries and a run is
// refused on when it differs: GOOS/GOARCH, e.g. "linux/amd64".
func Platform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// MaxLockBytes is the largest lock Read reads. A lock grows linearly with
// the toolbox (a tool of 1000 commands takes about 200 KiB), so only a
// file that is not a lock comes near it.
const MaxLockBytes = 32 << 20

// Read reads and decodes the lock at path (see Unmarshal). A missing file
// returns an error wrapping fs.ErrNotExist, so callers can tell the
// operator to run `toolbox lock`. A path that is not a regular file, or a
// file larger than MaxLockBytes, is refused before it is read whole
// (inputfile.ErrNotRegular, *inputfile.TooLargeError).
func Read(path string) (*Lock, error) {
	data, err := inputfile.ReadFile(path, MaxLockBytes)
	if err != nil {
		return nil, fmt.Errorf("reading lock: %w", err)
	}
	l, err := Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("reading lock %q: %w", path, err)
	}
	return l, nil
}

// Write encodes l canonically (see Marshal) and replaces path atomically: a
// temporary file in the same directory is written, synced, given mode 0644
// and renamed over path, then the directory is synced. A reader sees the
// old lock or the new one, never a mix; on any failure the temporary file
// is removed and path is left as it was.
func Write(path string, l *Lock) error {
	data, err := Marshal(l)
	if err != nil {
		return fmt.Errorf("writing lock %q: %w", path, err)
	}
	// 0644: a lock is read by whoever runs tools.
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("writing lock %q: %w", path, err)
	}
	return nil
}

// HashFile returns the hex SHA-256 of the file at path (lower case, 64
// digits), reading it as a stream. Only a regular file is hashed: a FIFO
// or a device is refused at once (an error wrapping
// inputfile.ErrNotRegular), since reading it could block or never end.
func HashFile(path string) (string, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return "", fmt.Errorf("hashing file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing file %q: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
