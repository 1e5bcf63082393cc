package mcpconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// WriteInWorkspace is Write for a file inside the workspace ws (path
// lies beneath it, as the project files of File do). The workspace is
// written by the tools toolbox runs (a write grant, a background command),
// so a symbolic link there is theirs as much as the operator's: one at
// .mcp.json, or a .cursor pointing elsewhere, would have toolbox (often
// root) read, back up and rewrite a file outside the workspace. So nothing
// on the way below ws is followed: each directory is opened from its
// parent's descriptor with openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS
// (made with mkdirat, mode 0755, when missing), the file is read with
// O_NOFOLLOW, and every later step (backup, temporary file, rename) names
// it through the directory's descriptor (/proc/self/fd/N/NAME), never by
// a path resolved again. A link on the way, or at the file itself, is
// refused with an error naming it and the fix; the workspace's own path is
// taken as given (runspec resolved its links once).
func WriteInWorkspace(ws, path string, c Client, s Server, now time.Time) (Written, error) {
	rel, err := filepath.Rel(ws, path)
	if err != nil || !filepath.IsLocal(rel) {
		return Written{File: path}, fmt.Errorf("writing %q: not inside the workspace %q", path, ws)
	}
	dir, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Written{File: path}, fmt.Errorf("opening the workspace %q: %w", ws, err)
	}
	defer func() { unix.Close(dir) }()
	shown := ws
	parts := strings.Split(filepath.Dir(rel), string(filepath.Separator))
	for _, part := range parts {
		if part == "." {
			continue
		}
		shown = filepath.Join(shown, part)
		next, err := openBeneath(dir, part)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(dir, part, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openBeneath(dir, part)
			}
		}
		if err != nil {
			return Written{File: path}, linkError(shown, ws, err)
		}
		unix.Close(dir)
		dir = next
	}
	name := filepath.Base(rel)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return Written{File: path}, linkError(path, ws, unix.ELOOP)
	}
	via := "/proc/self/fd/" + strconv.Itoa(dir)
	w, err := merge(Written{File: filepath.Join(via, name)}, readNoFollow, c, s, now)
	shownPath := func(p string) string {
		if rest, ok := strings.CutPrefix(p, via); ok {
			return filepath.Join(shown, rest)
		}
		return p
	}
	w.File, w.Backup = shownPath(w.File), shownPath(w.Backup)
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.File = shownPath(pe.File)
	} else if err != nil {
		err = &shownError{msg: strings.ReplaceAll(err.Error(), via, shown), err: err}
	}
	return w, err
}

// shownError is err with the descriptor's path in its text replaced by
// the directory's; Unwrap keeps its causes (fs.ErrNotExist,
// inputfile.ErrNotRegular) testable.
type shownError struct {
	msg string
	err error
}

func (e *shownError) Error() string { return e.msg }
func (e *shownError) Unwrap() error { return e.err }

// openBeneath opens the directory name inside dir without following a
// symbolic link or leaving dir.
func openBeneath(dir int, name string) (int, error) {
	for {
		fd, err := unix.Openat2(dir, name, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		return fd, err
	}
}

// linkError words a refusal on the way to the client's file: a symbolic
// link (ELOOP) or something that is not a directory.
func linkError(at, ws string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return fmt.Errorf("%q is a symbolic link inside the workspace %q: toolbox follows no link there (a tool may have planted it); replace it with the file or directory itself, or write elsewhere with --client-file", at, ws)
	}
	return fmt.Errorf("opening %q: %w", at, err)
}

// readNoFollow is inputfile.ReadFile refusing a symbolic link at path
// (O_NOFOLLOW) instead of following it.
func readNoFollow(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%q is a symbolic link: %w", path, inputfile.ErrNotRegular)
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file (%v): %w", path, st.Mode().Type(), inputfile.ErrNotRegular)
	}
	return inputfile.ReadAll(f, max, fmt.Sprintf("%q", path))
}
