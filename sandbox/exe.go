package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Executable is a binary opened once and hashed from that descriptor, so
// that what runs is what was checked (DESIGN.md §6, issue 10 #9): Start
// executes the descriptor itself where the mechanism allows, and where it
// cannot (a script under None or Landlock, whose interpreter opens the
// file again by name) it refuses unless nobody but root or toolbox's own
// user could have swapped the file since (see Command.Exe).
//
// Open it with OpenExecutable, compare SHA256 with what the lock says, hand
// it to Start in Command.Exe, and Close it once Start (or Cmd's command)
// has started. The zero value is not usable.
type Executable struct {
	f      *os.File
	path   string // as opened (absolute, clean)
	real   string // the opened file's own path, every symlink resolved
	sum    string
	script bool // starts with "#!"
	st     unix.Stat_t
}

// OpenExecutable opens path (absolute; symlinks are followed, since the
// content is checked from the descriptor), reads it whole into a SHA-256
// and keeps the descriptor. It refuses what it could not run as checked:
// not a regular file, no execute bit (both ErrStartFailed wrapping a
// *fs.PathError with EACCES, like exec), or a file that someone other than
// root or toolbox's own user or group could rewrite in place between the
// check and the start (a *RefusalError for FieldPath naming the file). A
// missing file wraps fs.ErrNotExist.
func OpenExecutable(path string) (*Executable, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: tool path %q is not absolute", ErrStartFailed, path)
	}
	path = filepath.Clean(path)
	// O_NONBLOCK: a fifo swapped in must not hang the open.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStartFailed, &fs.PathError{Op: "open", Path: path, Err: err})
	}
	e := &Executable{f: os.NewFile(uintptr(fd), path), path: path}
	if err := e.check(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Executable) check() error {
	fd := int(e.f.Fd())
	if err := unix.Fstat(fd, &e.st); err != nil {
		return fmt.Errorf("%w: %w", ErrStartFailed, &fs.PathError{Op: "stat", Path: e.path, Err: err})
	}
	if e.st.Mode&unix.S_IFMT != unix.S_IFREG || e.st.Mode&0o111 == 0 {
		return fmt.Errorf("%w: %w", ErrStartFailed, &fs.PathError{Op: "exec", Path: e.path, Err: syscall.EACCES})
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return fmt.Errorf("%w: %w", ErrStartFailed, &fs.PathError{Op: "open", Path: e.path, Err: err})
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(real) {
		return fmt.Errorf("%w: finding where %q lives: %v", ErrStartFailed, e.path, err)
	}
	e.real = real
	if who := untrustedWriter(&e.st); who != "" {
		return refuse(FieldPath, "", "make the binary writable only by root or the user running toolbox (chmod go-w, chown)",
			"binary %q is writable by %s, who could change it between its check and its start", e.path, who)
	}
	h := sha256.New()
	head := make([]byte, 2)
	n, _ := io.ReadFull(e.f, head)
	h.Write(head[:n])
	if _, err := io.Copy(h, e.f); err != nil {
		return fmt.Errorf("%w: hashing %q: %w", ErrStartFailed, e.path, err)
	}
	e.sum = hex.EncodeToString(h.Sum(nil))
	e.script = n == 2 && head[0] == '#' && head[1] == '!'
	return nil
}

// Path is the path the executable was opened by.
func (e *Executable) Path() string { return e.path }

// SHA256 is the hex SHA-256 of the content read from the descriptor.
func (e *Executable) SHA256() string { return e.sum }

// Close releases the descriptor. It is safe to call more than once.
func (e *Executable) Close() error {
	if e == nil || e.f == nil {
		return nil
	}
	return e.f.Close()
}

// trustedUID reports whether uid may write what toolbox runs: root, or the
// user toolbox runs as (who could run anything anyway).
func trustedUID(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// trustedGID: group root, or toolbox's own group (a user-private group
// under the usual umask 002).
func trustedGID(gid uint32) bool { return gid == 0 || int(gid) == os.Getegid() }

// untrustedWriter says who besides root and toolbox's user and group may
// write the file or directory st describes ("" = nobody).
func untrustedWriter(st *unix.Stat_t) string {
	switch {
	case !trustedUID(st.Uid):
		return fmt.Sprintf("its owner uid %d", st.Uid)
	case st.Mode&0o020 != 0 && !trustedGID(st.Gid):
		return fmt.Sprintf("its group gid %d", st.Gid)
	case st.Mode&0o002 != 0:
		return "every user"
	}
	return ""
}

// swapProof checks, for a script that will be executed by its path again,
// that nobody but a trusted user could rename another file into its place:
// its real path's directories, from its own up to /, are writable only by
// trusted users, or sticky (only an entry's owner may rename it) with a
// trusted owner of the entry below. Errors are a *RefusalError naming the
// directory.
func (e *Executable) swapProof(m Mechanism) error {
	child := e.st.Uid
	for dir := filepath.Dir(e.real); ; dir = filepath.Dir(dir) {
		var st unix.Stat_t
		if err := unix.Lstat(dir, &st); err != nil {
			return fmt.Errorf("%w: checking %q: %w", ErrStartFailed, dir, err)
		}
		who := untrustedWriter(&st)
		if who != "" && st.Mode&unix.S_ISVTX != 0 && trustedUID(st.Uid) && trustedUID(child) {
			who = ""
		}
		if who != "" {
			return refuse(FieldPath, m, "keep scripts in directories only root or the user running toolbox can write (chmod o-w,g-w), or use sandbox = \"bwrap\", which runs the checked file itself",
				"script %q is run again by its name, and directory %q is writable by %s, who could swap the script after its check", e.path, dir, who)
		}
		if dir == "/" {
			return nil
		}
		child = st.Uid
	}
}

// sameFile checks that path still names the descriptor's file, just
// before a script is executed by its name.
func (e *Executable) sameFile(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Dev != e.st.Dev || st.Ino != e.st.Ino {
		return fmt.Errorf("%w: %q was replaced after its check", ErrStartFailed, path)
	}
	return nil
}

// execFDBand is where execFD places its duplicates: far above the
// descriptors a process commonly holds. Between fork and exec Go's
// syscall.forkExec moves its error pipe (and any file whose number is
// below its target) to max(the files' numbers)+1 and up; a duplicate
// placed just above the files (as the lowest free descriptor often is in
// a busy process) was clobbered by that pipe, and the child then executed
// the pipe (EACCES), 1 start in a few hundred under parallel probes.
const execFDBand = 8192

// execFD returns a close-on-exec duplicate of f, placed in the band above
// execFDBand (below RLIMIT_NOFILE, and above every descriptor a child with
// nFiles inherited files may be given), and the /proc/self/fd path that
// executes it. The kernel opens the file by that path before it closes
// close-on-exec descriptors, so an ELF binary runs from the checked
// descriptor and its new image inherits nothing (a script cannot: its
// interpreter would find the descriptor closed).
func execFD(f *os.File, nFiles int) (*os.File, string, error) {
	least := execFDBand
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(least)+64 {
		least = max(int(lim.Cur)/2, 2*nFiles+8) // a low limit: the upper half of it
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, least)
	if err != nil {
		return nil, "", fmt.Errorf("%w: duplicating %q: %w", ErrStartFailed, f.Name(), err)
	}
	return os.NewFile(uintptr(fd), f.Name()), "/proc/self/fd/" + strconv.Itoa(fd), nil
}

// noneExecPath is what an unconfined child is executed by: Path without
// c.Exe; with it, the checked descriptor itself for a binary (a
// close-on-exec duplicate, returned to be closed once started), or for a
// script its resolved path once nobody but a trusted user could have
// swapped it and the path still names the checked file.
func noneExecPath(c Command) (string, *os.File, error) {
	e := c.Exe
	if e == nil {
		return c.Path, nil, nil
	}
	if e.script {
		if err := e.swapProof(None); err != nil {
			return "", nil, err
		}
		if err := e.sameFile(e.real); err != nil {
			return "", nil, err
		}
		return e.real, nil, nil
	}
	dup, path, err := execFD(e.f, 3)
	if err != nil {
		return "", nil, err
	}
	return path, dup, nil
}

// namedAs makes an exec error executed through /proc/self/fd name the
// tool's path instead.
func namedAs(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Path, "/proc/self/fd/") {
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	}
	return err
}
