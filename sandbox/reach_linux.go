package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/shq"
)

// checkReachable refuses (FieldRunAs) a start under run_as whose user
// cannot search a directory on the way to a path the start needs, which
// would otherwise fail inside bwrap or the helper with a bare "Permission
// denied" (a private TMPDIR, a tool kept in root's 0700 home). The paths:
// the binary (except under None from a checked descriptor, which the
// reaper executes with no path walk), the working directory and, under landlock and bwrap, the shared
// tmp; under bwrap, which binds everything as that user, also the tool's
// directory and every grant. Only mode bits are read: a directory with a
// POSIX ACL is taken as searchable (the kernel decides then). A path
// through a symlink is checked along its link and along its target. It never
// grants anything: it only turns a failure the kernel would cause into a
// refusal that names the path, the user and the fix.
func checkReachable(s *Spec, c Command, m Mechanism) error {
	id := s.RunAs
	if id == nil || id.UID == 0 {
		return nil
	}
	type need struct {
		what, path string
		self       bool // the path itself must be searchable (a directory entered)
	}
	var needs []need
	if c.Exe == nil || m != None {
		needs = append(needs, need{"the tool's binary", c.Path, false})
	}
	if c.Dir != "" {
		needs = append(needs, need{"the working directory", c.Dir, true})
	}
	if m != None && !s.TmpPrivate && s.SharedTmp != "" {
		needs = append(needs, need{"the shared tmp", s.SharedTmp, true})
	}
	if m == Bwrap {
		if s.ToolDir != "" {
			needs = append(needs, need{"the tool's directory", s.ToolDir, false})
		}
		for _, p := range s.Read {
			needs = append(needs, need{"the read grant", p, false})
		}
		for _, p := range s.Write {
			needs = append(needs, need{"the write grant", p, false})
		}
	}
	for _, n := range needs {
		if !filepath.IsAbs(n.path) {
			continue
		}
		dir := filepath.Dir(n.path)
		if n.self {
			dir = filepath.Clean(n.path)
		}
		d, fi := unsearchable(dir, id)
		if d == "" {
			// A symlink on the way, or the path itself one, leads the
			// kernel through its target's directories too, which the
			// walk above only saw through os.Stat of the link.
			if real, err := filepath.EvalSymlinks(n.path); err == nil && real != filepath.Clean(n.path) {
				if !n.self {
					real = filepath.Dir(real)
				}
				d, fi = unsearchable(real, id)
			}
		}
		if d != "" {
			st := fi.Sys().(*syscall.Stat_t)
			return refuse(FieldRunAs, m,
				fmt.Sprintf("let uid %d search %s (e.g. chmod o+x %s), or keep %s where that user can reach it (for the shared tmp: a TMPDIR open to all, such as /tmp), or remove run_as", id.UID, d, shq.Quote(d), n.what),
				"the run_as user (uid %d) cannot search %s (mode %#o, owner %d:%d), on the way to %s %s", id.UID, d, fi.Mode().Perm(), st.Uid, st.Gid, n.what, n.path)
		}
	}
	return nil
}

// unsearchable returns the first directory from / to dir (inclusive) that
// id may not search by its mode bits, with its FileInfo, or "".
func unsearchable(dir string, id *Identity) (string, os.FileInfo) {
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == "/" {
			break
		}
	}
	slices.Reverse(chain)
	for _, d := range chain {
		fi, err := os.Stat(d)
		if err != nil {
			return "", nil // missing paths are refused elsewhere, by field
		}
		st := fi.Sys().(*syscall.Stat_t)
		perm := uint32(fi.Mode().Perm())
		var bit uint32
		switch {
		case st.Uid == id.UID:
			bit = 0o100
		case st.Gid == id.GID || slices.Contains(id.Groups, st.Gid):
			bit = 0o010
		default:
			bit = 0o001
		}
		if perm&bit != 0 || hasACL(d) {
			continue
		}
		return d, fi
	}
	return "", nil
}

// hasACL reports whether path carries a POSIX access ACL.
func hasACL(path string) bool {
	n, err := unix.Getxattr(path, "system.posix_acl_access", nil)
	return err == nil && n > 0
}
