package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// Check refuses, without starting anything, what Start would refuse about
// the spec's declarations and paths: a declaration the mechanism cannot
// honour (landlock: net: none, tmp: private, unix sockets as uid 0), a
// declared path that does not exist, covers the host's /tmp or goes through a planted link, and a
// grant that would let the tool write (or, for hidden paths, reach) a
// protected path the mechanism cannot mask. The compiler calls it at lock
// time with what it knows then; Start checks again. Errors are
// *RefusalError (named as declared: AsDeclared). A nil spec or None has
// nothing to check.
func (s *Spec) Check() error {
	return s.AsDeclared(s.check())
}

func (s *Spec) check() error {
	if s == nil {
		return nil
	}
	switch s.Mechanism {
	case "", None:
		return nil
	case Landlock:
		if r := landlockDeclRefusal(s.NetNone, s.TmpPrivate); r != nil {
			return r
		}
		if r := landlockSocketRefusal(s.UnixSockets, toolUID(s) == 0, s.RunAs != nil); r != nil {
			return r
		}
	case Bwrap:
	default:
		return fmt.Errorf("sandbox mechanism %q cannot be checked (want bwrap or landlock)", s.Mechanism)
	}
	gs, err := s.grants(nil)
	if err != nil {
		return err
	}
	defer closeGrants(gs)
	return guardRefusal(s.Mechanism, gs, s.guardedPaths())
}

const fixRundir = "remove what is in the way (a symlink or a file), or declare a rundir inside the tool's writable paths"

// MakeRundir creates the tool's working directory dir (absolute) and its
// missing parents, mode 0755, before a start under s (DESIGN.md §6, issue
// 10 #8), without ever following a symlink:
//
//   - under bwrap and landlock, dir must lie inside a declared path (else
//     a *RefusalError for FieldRundir) and is reached from that path's
//     descriptor (opened as Start opens it, after the same checks), one
//     component at a time with openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS
//     and mkdirat. The directory created last is given to RunAs only when
//     the path holding it is writable: nothing outside the tool's write
//     grants is ever chowned.
//   - under None the part of dir shared with the tool's directory is the
//     operator's layout and resolved as it is (a home directory reached
//     through a link works); below it the walk is the same, and nothing
//     is chowned.
//
// A symlink (or a non-directory) on the way is refused, never followed. An
// existing dir is left as it is.
func (s *Spec) MakeRundir(dir string) error {
	if !filepath.IsAbs(dir) {
		return refuse(FieldRundir, s.Mechanism, fixRundir, "rundir %q is not absolute", dir)
	}
	dir = filepath.Clean(dir)
	switch s.Mechanism {
	case Bwrap, Landlock:
		return s.makeRundirSandboxed(dir)
	}
	// The part shared with the tool's directory is the operator's layout
	// (it holds the checked binary) and may go through links; below it
	// nothing is followed.
	base := commonDir(dir, s.ToolDir)
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		return fmt.Errorf("creating rundir %q: %w", dir, err)
	}
	root, err := helper.OpenNoFollow(real)
	if err != nil {
		return fmt.Errorf("creating rundir %q: %w", dir, err)
	}
	defer root.Close()
	rel, _ := filepath.Rel(base, dir)
	last, err := walkMkdir(root, real, rel, s.Mechanism)
	if last != nil {
		last.Close()
	}
	return err
}

// commonDir is the deepest directory holding both a and b (absolute,
// clean); "/" when b is empty.
func commonDir(a, b string) string {
	if b == "" {
		return "/"
	}
	for d := filepath.Clean(b); ; d = filepath.Dir(d) {
		if within(a, d) {
			return d
		}
		if d == "/" {
			return d
		}
	}
}

func (s *Spec) makeRundirSandboxed(dir string) error {
	gs, err := s.grants(nil)
	if err != nil {
		return err
	}
	defer closeGrants(gs)
	if err := guardRefusal(s.Mechanism, gs, s.guardedPaths()); err != nil {
		return err
	}
	best := -1
	for i, g := range gs {
		if g.dir && g.field != FieldTmp && within(dir, g.dest) && (best < 0 || len(g.dest) > len(gs[best].dest)) {
			best = i
		}
	}
	if best < 0 {
		return refuse(FieldRundir, s.Mechanism, "declare the rundir inside runtime.sandbox.fs.write (or fs.read)",
			"rundir %q is outside the tool's sandbox", dir)
	}
	g := gs[best]
	rel, _ := filepath.Rel(g.dest, dir)
	last, err := walkMkdir(g.f, g.src, rel, s.Mechanism)
	if err != nil || last == nil {
		return err
	}
	defer last.Close()
	if g.write && s.RunAs != nil {
		// By descriptor: the directory just made, nothing a link leads to.
		if err := unix.Fchownat(int(last.Fd()), "", int(s.RunAs.UID), int(s.RunAs.GID), unix.AT_EMPTY_PATH); err != nil {
			return fmt.Errorf("giving rundir %q to uid %d: %w", dir, s.RunAs.UID, err)
		}
	}
	return nil
}

// walkMkdir walks rel below root (whose host path is rootPath) without
// following symlinks, creating missing directories. It returns the last
// directory when it created it (O_PATH; the caller closes it), nil when it
// existed.
func walkMkdir(root *os.File, rootPath, rel string, m Mechanism) (*os.File, error) {
	if rel == "." || rel == "" {
		return nil, nil
	}
	cur, err := unix.Dup(int(root.Fd()))
	if err != nil {
		return nil, fmt.Errorf("creating rundir: %w", err)
	}
	created := false
	at := rootPath
	parts := strings.Split(rel, string(filepath.Separator))
	for i, name := range parts {
		at = filepath.Join(at, name)
		how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
		next, err := unix.Openat2(cur, name, how)
		created = false
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(cur, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				created = err == nil
				next, err = unix.Openat2(cur, name, how)
			}
		}
		unix.Close(cur)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
				return nil, refuse(FieldRundir, m, fixRundir, "rundir path %q is a symlink or not a directory; toolbox follows no link there", at)
			}
			return nil, fmt.Errorf("creating rundir: %w", &fs.PathError{Op: "mkdir", Path: at, Err: err})
		}
		cur = next
		if i == len(parts)-1 && created {
			return os.NewFile(uintptr(cur), at), nil
		}
	}
	unix.Close(cur)
	return nil, nil
}
