package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// BwrapPin is the bubblewrap binary a lock pins (DESIGN.md §4, §6, issue
// 10 #7): Path is absolute with every symlink resolved, SHA256 the hex
// SHA-256 of its content. Under Bwrap, Start executes exactly this file:
// it opens Path without following any symlink, checks SHA256 from that
// descriptor and executes the descriptor. PATH is searched only by
// FindBwrap, at lock time.
type BwrapPin struct {
	Path   string
	SHA256 string
}

// FindBwrap looks bwrap up on PATH, resolves every symlink and hashes it:
// what `toolbox lock` pins. Detect uses it, so that the bubblewrap probed
// is the one pinned. Errors say bwrap is missing or unreadable.
func FindBwrap() (*BwrapPin, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("finding bwrap: %w", err)
	}
	if p, err = filepath.Abs(p); err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		return nil, fmt.Errorf("finding bwrap: %w", err)
	}
	e, err := OpenExecutable(p)
	if err != nil {
		return nil, fmt.Errorf("pinning bwrap: %w", err)
	}
	defer e.Close()
	return &BwrapPin{Path: p, SHA256: e.SHA256()}, nil
}

const fixBwrapChanged = "run toolbox lock to pin the bubblewrap installed now (it was upgraded, moved or replaced since the lock)"

// openBwrap opens the pinned bubblewrap without following any symlink and
// checks its hash from that descriptor. Errors are *RefusalError for
// FieldSandbox: no pin (a lock written before pinning), a missing or
// changed binary.
func openBwrap(pin *BwrapPin) (*Executable, error) {
	if pin == nil || !filepath.IsAbs(pin.Path) {
		return nil, refuse(FieldSandbox, Bwrap, "run toolbox lock", "no bubblewrap is pinned for this tool")
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, pin.Path, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, refuse(FieldSandbox, Bwrap, fixBwrapChanged, "opening pinned bwrap %q: %v", pin.Path, &fs.PathError{Op: "openat2", Path: pin.Path, Err: err})
	}
	e := &Executable{f: os.NewFile(uintptr(fd), pin.Path), path: pin.Path}
	if err := e.check(); err != nil {
		e.Close()
		return nil, err
	}
	if e.sum != pin.SHA256 {
		e.Close()
		return nil, refuse(FieldSandbox, Bwrap, fixBwrapChanged, "bwrap %q changed since the lock (sha256 %.12s, locked %.12s)", pin.Path, e.sum, pin.SHA256)
	}
	return e, nil
}
