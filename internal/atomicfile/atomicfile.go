// Package atomicfile writes the files toolbox owns (the lock, a client's
// MCP configuration, the MCP token file, a formatted toolbox file) so that
// a reader, or the next run after a crash, sees the old file whole or the
// new one whole, never a part of either.
//
// How: the data goes to a temporary file in the target's directory (so
// that the rename stays within one file system), which is synced, given
// its mode exactly (the umask does not apply), closed, then renamed over
// the target (or, for Create, linked into place), and the directory is
// synced so that the rename survives a crash. On any failure the temporary
// file is removed and the target is left as it was.
//
// It deliberately does not lock against concurrent writers (the last
// rename wins; Create is the exception: the first one wins), keep a backup,
// follow symbolic links (a link at the target is replaced by Write, refused
// by WriteRegular and Create), or create missing directories.
//
// Every error it returns is an *fs.PathError naming the target (or, for the
// directory sync, its directory), with the step that failed as Op, so
// errors.Is sees through it to the cause (syscall.ENOSPC, fs.ErrExist,
// ErrNotRegular).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is the cause WriteRegular gives when something other than
// a regular file (a FIFO, a device, a socket, a directory, a symbolic
// link) is at the target.
var ErrNotRegular = errors.New("not a regular file")

// Write puts data at path with mode perm (permission bits, set exactly),
// replacing whatever path names (a symbolic link is replaced, not
// followed). A missing directory is an error.
func Write(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, replace, (*os.File).Write)
}

// WriteRegular is Write that only replaces a regular file: when path names
// anything else, the error wraps ErrNotRegular and path is left as it is.
// A missing path is created. The check is made just before the rename, so
// it cannot stop a writer that races with it; it keeps toolbox from
// replacing a FIFO or device an operator put there.
func WriteRegular(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, replaceRegular, (*os.File).Write)
}

// Create is Write that never replaces: the file is linked into place, so
// when path already exists (anything, even a dangling symbolic link) the
// error wraps fs.ErrExist and path is left as it is; of two concurrent
// Creates exactly one succeeds.
func Create(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, create, (*os.File).Write)
}

// how says how the temporary file takes the target's place.
type how int

const (
	replace how = iota
	replaceRegular
	create
)

// write is the three functions above, writing the data with w, which
// tests replace to inject a fault.
func write(path string, data []byte, perm fs.FileMode, h how, w func(*os.File, []byte) (int, error)) (err error) {
	fail := func(op string, err error) error {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // it names the temporary file, which is gone
		}
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return &fs.PathError{Op: op, Path: path, Err: err}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "." // not CreateTemp's default, the system's temporary directory
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fail("create a temporary file for", err)
	}
	placed := false
	defer func() {
		if err != nil || h == create {
			_ = tmp.Close()
		}
		if !placed || h == create {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = w(tmp, data); err != nil {
		return fail("write", err)
	}
	// CreateTemp makes the file 0600; Chmod ignores the umask.
	if err = tmp.Chmod(perm.Perm()); err != nil {
		return fail("chmod", err)
	}
	if err = tmp.Sync(); err != nil {
		return fail("sync", err)
	}
	if err = tmp.Close(); err != nil {
		return fail("close", err)
	}
	switch h {
	case create:
		if err = os.Link(tmp.Name(), path); err != nil {
			return fail("link", err)
		}
	case replaceRegular:
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%w (%v)", ErrNotRegular, fi.Mode().Type())
			return fail("replace", err)
		}
		fallthrough
	default:
		if err = os.Rename(tmp.Name(), path); err != nil {
			return fail("rename", err)
		}
	}
	placed = true
	return syncDir(dir)
}

// syncDir makes the rename durable. File systems that cannot sync a
// directory say EINVAL; that is not a failure.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err == nil {
		err = d.Sync()
		d.Close()
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &fs.PathError{Op: "sync directory", Path: dir, Err: err}
	}
	return nil
}
