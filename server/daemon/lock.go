package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
)

// LockFile is a lock as the daemon read it: its absolute path, its
// contents, and the file's identity when it was read (so that a change is
// seen without reading it again).
type LockFile struct {
	// Path is the lock's absolute path.
	Path string
	Lock *manifest.Lock
	// stamp is the file's identity before it was read.
	stamp fileStamp
}

// fileStamp tells two versions of a file apart without reading it: `toolbox
// lock` replaces the lock by rename, which changes at least the mtime.
type fileStamp struct {
	mtime time.Time
	size  int64
	ino   uint64
}

func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{mtime: fi.ModTime(), size: fi.Size(), ino: inode(fi)}
}

// ReadLock reads the lock of toolboxFile (manifest.LockPath) and refuses,
// with the fix, a lock that is missing or older than the toolbox file's
// configuration (launcher.VerifyToolboxFile): DESIGN.md §4. Each tool's binary is
// verified later, at each start.
func ReadLock(toolboxFile string) (*LockFile, error) {
	path := manifest.LockPath(toolboxFile)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	lf, err := readLockFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist; run `toolbox lock` first", path)
	}
	if err != nil {
		return nil, err
	}
	if err := launcher.VerifyToolboxFile(path, lf.Lock); err != nil {
		return nil, err
	}
	return lf, nil
}

// readLockFile stats, then reads, the lock at path (absolute).
func readLockFile(path string) (*LockFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the lock: %w", err)
	}
	l, err := manifest.Read(path)
	if err != nil {
		return nil, err
	}
	return &LockFile{Path: path, Lock: l, stamp: stampOf(fi)}, nil
}

// lockWatch re-reads the lock when its file changed.
type lockWatch struct {
	mu      sync.Mutex
	current *LockFile
}

// refresh returns the newer lock when the file changed since it was last
// read, else nil. A lock that cannot be read is reported through logf and
// leaves the current one in use (it is tried again next time).
func (w *lockWatch) refresh(logf func(string, ...any)) *LockFile {
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := os.Stat(w.current.Path)
	if err != nil {
		logf("the lock %s: %v; keeping the lock read before", w.current.Path, err)
		return nil
	}
	if stampOf(fi) == w.current.stamp {
		return nil
	}
	lf, err := readLockFile(w.current.Path)
	if err != nil {
		logf("re-reading the lock: %v; keeping the lock read before", err)
		return nil
	}
	w.current = lf
	return lf
}

// sameFile reports whether two paths name one file: equal once cleaned, or
// the same inode.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
