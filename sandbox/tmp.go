package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The shared scratch directory (tmp: shared, DESIGN.md §6, decision D1):
// the host's /tmp is never given to a tool. Instead every toolbox (one
// lock) has its own directory
//
//	<os.TempDir()>/toolbox-<uid>/<16 hex digits of sha256(lock path)>
//
// where <uid> is toolbox's effective uid. The parent is owned by that uid
// with mode 0711 (others may traverse to the directory, not list or add
// to it); the directory itself is owned by that uid with mode 1777, so
// that tools running as other users (run_as) can write there and, the
// sticky bit set, cannot remove each other's files. Both are created
// without following any symlink (openat2 RESOLVE_NO_SYMLINKS, mkdirat,
// renameat2 RENAME_NOREPLACE of a fully set-up directory, so that no one
// ever sees a half-made one) and checked (owner, mode, type) before every
// use; anything else there is refused, never repaired or followed.
//
// Size (decision D6): the directory is the mount point of a tmpfs of the
// toolbox's tmp_size (the toolbox-wide limits block, not a tool's own)
// where toolbox may mount in the host's mount namespace (root with
// CAP_SYS_ADMIN, see mountSharedTmp), so that the toolbox's tools
// together never write more than that into it. Elsewhere it stays a plain
// directory, bounded per file only (file_size).
//
// Lifetime: toolbox never removes it. Like /tmp it lasts until the system
// cleans it (at boot, or by age with systemd-tmpfiles); toolbox recreates
// it when missing. Files one tool leaves there are seen by the toolbox's
// other tools, which is what "shared" means; other toolboxes and the rest
// of the host's /tmp stay out of reach.
const (
	sharedTmpParentMode = 0o711
	sharedTmpMode       = 0o1777
)

// SharedTmpDir returns the shared scratch directory of the toolbox whose
// lock is at lockPath (absolute), creating it (and its parent) when
// missing, and bounds it to size bytes (the toolbox's tmp_size; 0 for
// none): mounted is the size of the tmpfs it is now the root of, to put in
// Spec.SharedTmpSize, or 0 when it stays a plain directory (size 0, or
// this process may not mount: not root). A plain directory is mounted on,
// a tmpfs of another size resized. Errors name the directory and what is
// wrong with it (a symlink, another owner, another mode: fix it by
// removing the directory; a tmpfs holding more than size: the error says
// the fix).
func SharedTmpDir(lockPath string, size uint64) (dir string, mounted uint64, err error) {
	dir, err = SharedTmpPath(lockPath)
	if err != nil {
		return "", 0, err
	}
	parent := filepath.Dir(dir)
	base := filepath.Dir(parent)
	if err := ensureDir(base, filepath.Base(parent), sharedTmpParentMode); err != nil {
		return "", 0, err
	}
	// ensureDir has checked both levels; Start opens and checks the
	// directory again from the descriptor it gives the tool
	// (openSharedTmp).
	if err := ensureDir(parent, filepath.Base(dir), sharedTmpMode); err != nil {
		return "", 0, err
	}
	if size == 0 {
		return dir, 0, nil
	}
	switch err := mountSharedTmp(parent, filepath.Base(dir), size); {
	case errors.Is(err, errNoMount):
		return dir, 0, nil
	case err != nil:
		return "", 0, err
	}
	return dir, size, nil
}

// SharedTmpPath is where SharedTmpDir puts the shared scratch directory of
// the toolbox whose lock is at lockPath, without creating or checking
// anything (tests remove it with it).
func SharedTmpPath(lockPath string) (string, error) {
	base, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return "", fmt.Errorf("finding the temporary directory: %w", err)
	}
	sum := sha256.Sum256([]byte(filepath.Clean(lockPath)))
	parent := filepath.Join(base, "toolbox-"+strconv.Itoa(os.Geteuid()))
	return filepath.Join(parent, hex.EncodeToString(sum[:8])), nil
}

// ensureDir makes dir/name a directory of the given mode owned by toolbox,
// or checks that it is one.
func ensureDir(dir, name string, mode uint32) error {
	path := filepath.Join(dir, name)
	d, err := openNoFollowMode(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("opening %q: %w", dir, err)
	}
	defer d.Close()
	err = checkOwnDir(int(d.Fd()), name, path, mode)
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Build it under a random name, then move it into place only if
	// nothing took the name meanwhile.
	tmp := "." + name + ".tmp-" + rand.Text()[:12]
	if err := unix.Mkdirat(int(d.Fd()), tmp, 0o700); err != nil {
		return fmt.Errorf("creating %q: %w", path, err)
	}
	t, err := unix.Openat2(int(d.Fd()), tmp, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
	if err == nil {
		err = unix.Fchmod(t, mode&0o7777)
		unix.Close(t)
	}
	if err == nil {
		err = unix.Renameat2(int(d.Fd()), tmp, int(d.Fd()), name, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		_ = unix.Unlinkat(int(d.Fd()), tmp, unix.AT_REMOVEDIR)
		if !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("creating %q: %w", path, err)
		}
	}
	return checkOwnDir(int(d.Fd()), name, path, mode)
}

// checkOwnDir checks that name in dirfd is a directory (not a symlink)
// owned by toolbox's uid with exactly mode. A missing one wraps
// os.ErrNotExist.
func checkOwnDir(dirfd int, name, path string, mode uint32) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("shared tmp %q: %w", path, os.ErrNotExist)
		}
		return fmt.Errorf("checking shared tmp %q: %w", path, err)
	}
	return checkSharedStat(&st, path, mode)
}

func checkSharedStat(st *unix.Stat_t, path string, mode uint32) error {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("shared tmp %q is not a directory (a symlink or file was put there): remove it", path)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("shared tmp %q belongs to uid %d, not to toolbox's uid %d: remove it", path, st.Uid, os.Geteuid())
	case st.Mode&0o7777 != mode:
		return fmt.Errorf("shared tmp %q has mode %#o, want %#o: remove it", path, st.Mode&0o7777, mode)
	}
	return nil
}

// openSharedTmp opens the shared scratch directory at path without
// following any symlink and checks it and its parent (owner, mode, type)
// and, when size is not 0, that it is the root of a tmpfs of size bytes
// (SharedTmpDir mounted it): the descriptor it returns is what the tool is
// given. Errors are a *RefusalError for FieldTmp.
func openSharedTmp(path string, size uint64) (*os.File, error) {
	fail := func(err error) (*os.File, error) {
		return nil, refuse(FieldTmp, "", "remove the directory named (toolbox recreates it), or declare tmp = \"private\" (bwrap)",
			"the toolbox's shared tmp cannot be used: %v", err)
	}
	parent, err := openNoFollowMode(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fail(err)
	}
	defer parent.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(parent.Fd()), &st); err != nil {
		return fail(err)
	}
	if err := checkSharedStat(&st, parent.Name(), sharedTmpParentMode); err != nil {
		return fail(err)
	}
	fd, err := unix.Openat2(int(parent.Fd()), filepath.Base(path), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return fail(fmt.Errorf("opening %q: %w", path, err))
	}
	f := os.NewFile(uintptr(fd), path)
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return fail(err)
	}
	if err := checkSharedStat(&st, path, sharedTmpMode); err != nil {
		f.Close()
		return fail(err)
	}
	if size > 0 {
		if err := checkSharedTmpMount(int(parent.Fd()), fd, path, size); err != nil {
			f.Close()
			return fail(err)
		}
	}
	return f, nil
}

// openNoFollowMode opens p (absolute) with flags, refusing any symlink on
// the way.
func openNoFollowMode(p string, flags int) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// withTmpdir returns env with TMPDIR set to dir (or removed when dir is
// ""), so that a tool finds its scratch space where the sandbox put it.
func withTmpdir(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) >= 7 && kv[:7] == "TMPDIR=" {
			continue
		}
		out = append(out, kv)
	}
	if dir != "" {
		out = append(out, "TMPDIR="+dir)
	}
	return out
}
