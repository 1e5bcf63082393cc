package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/shq"
)

// The shared tmp's size bound (DESIGN.md §6, decision D6): where toolbox
// may mount in the host's mount namespace (euid 0 with CAP_SYS_ADMIN), the
// shared scratch directory is the mount point of a tmpfs toolbox mounts
// there: size=<the toolbox's tmp_size>, mode=1777, owned by toolbox's
// euid and egid, nosuid and nodev (not noexec: go test runs its test
// binaries from $TMPDIR). Without that privilege (Fsopen fails with EPERM)
// it stays a plain directory, bounded per file by file_size only.

// errNoMount is returned by mountSharedTmp when this process cannot mount
// in its mount namespace: the shared tmp then stays a plain directory.
var errNoMount = errors.New("cannot mount here")

// pageRound rounds n bytes up to whole pages, as tmpfs does with size=.
func pageRound(n uint64) uint64 {
	p := uint64(os.Getpagesize())
	return (n + p - 1) / p * p
}

// sharedTmpState is what lies on the shared tmp's directory (an O_PATH
// descriptor of it): a tmpfs mounted there and its size in bytes, or not.
type sharedTmpState struct {
	mountRoot bool   // the descriptor is the root of a mount
	tmpfs     bool   // of a tmpfs
	size      uint64 // f_blocks*f_bsize
	used      uint64 // (f_blocks-f_bfree)*f_bsize
}

// sharedTmpStat reads the state of the directory fd, whose parent
// directory is parentFd: it is a mount root when statx says so
// (STATX_ATTR_MOUNT_ROOT, Linux 5.8) or, on older kernels, when it lies on
// another device than its parent (a tmpfs always has a device of its own).
func sharedTmpStat(parentFd, fd int) (sharedTmpState, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &stx); err != nil {
		return sharedTmpState{}, fmt.Errorf("statx: %w", err)
	}
	root := stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		var pst unix.Stat_t
		if err := unix.Fstat(parentFd, &pst); err != nil {
			return sharedTmpState{}, fmt.Errorf("checking the parent: %w", err)
		}
		root = unix.Mkdev(stx.Dev_major, stx.Dev_minor) != pst.Dev
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return sharedTmpState{}, fmt.Errorf("statfs: %w", err)
	}
	bs := uint64(fs.Bsize)
	return sharedTmpState{
		mountRoot: root,
		tmpfs:     fs.Type == unix.TMPFS_MAGIC,
		size:      fs.Blocks * bs,
		used:      (fs.Blocks - fs.Bfree) * bs,
	}, nil
}

// checkSharedTmpMount checks that the directory fd (at path, in parentFd)
// is the root of a tmpfs of size bytes (rounded up to pages): what Start
// requires before giving a tool a shared tmp whose Spec.SharedTmpSize is
// set.
func checkSharedTmpMount(parentFd, fd int, path string, size uint64) error {
	st, err := sharedTmpStat(parentFd, fd)
	if err != nil {
		return fmt.Errorf("checking shared tmp %q: %w", path, err)
	}
	switch {
	case !st.mountRoot || !st.tmpfs:
		return fmt.Errorf("shared tmp %q is not the tmpfs toolbox mounts there (someone unmounted it, or mounted something else)", path)
	case st.size != pageRound(size):
		return fmt.Errorf("shared tmp %q is a tmpfs of %s, not of tmp_size %s", path, FormatSize(st.size), FormatSize(pageRound(size)))
	}
	return nil
}

// mountSharedTmp makes dir (the shared tmp, already created and checked
// by ensureDir) the root of a tmpfs of size bytes. When it already is,
// nothing more is done (every start after the first); otherwise it holds
// an exclusive flock on the parent while it checks again and mounts, so
// that two toolbox processes starting at once never stack two mounts. A plain directory is
// mounted on; a tmpfs of another size is reconfigured to size, unless it
// holds more than that (refused naming the directory and the fix).
// Everything is done through descriptors opened without following any
// symlink: the directory is never named by a path that could be resolved
// again. It returns errNoMount when this process may not mount (no
// CAP_SYS_ADMIN in the host's mount namespace).
func mountSharedTmp(parentPath, name string, size uint64) error {
	path := parentPath + "/" + name
	parent, err := openNoFollowMode(parentPath, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("opening %q: %w", parentPath, err)
	}
	defer parent.Close()
	want := pageRound(size)
	// Every start of a toolbox finds its tmpfs mounted already: check
	// that without the lock, so that concurrent starts do not queue on
	// it; lock only to mount or resize.
	if fd, cur, err := inspectSharedTmp(int(parent.Fd()), name, path); err == nil {
		unix.Close(fd)
		if cur.mountRoot && cur.tmpfs && cur.size == want {
			return nil
		}
	}
	if err := unix.Flock(int(parent.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %q: %w", parentPath, err)
	}
	// Closing the descriptor releases the lock.
	fd, cur, err := inspectSharedTmp(int(parent.Fd()), name, path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	switch {
	case cur.mountRoot && !cur.tmpfs:
		return fmt.Errorf("shared tmp %q is the mount point of something other than a tmpfs: unmount it (umount %s)", path, shq.Quote(path))
	case cur.mountRoot && cur.size == want:
		return nil
	case cur.mountRoot:
		return resizeSharedTmp(fd, path, cur, want)
	}
	return newSharedTmpMount(fd, path, size)
}

// inspectSharedTmp opens name in the directory parent (an O_PATH
// descriptor the caller closes, never following a link), checks its
// owner, mode and type, and says what is mounted there.
func inspectSharedTmp(parent int, name, path string) (int, sharedTmpState, error) {
	fd, err := unix.Openat2(parent, name, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, sharedTmpState{}, fmt.Errorf("opening shared tmp %q: %w", path, err)
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	if err == nil {
		if err := checkSharedStat(&st, path, sharedTmpMode); err != nil {
			unix.Close(fd)
			return -1, sharedTmpState{}, err
		}
	}
	var cur sharedTmpState
	if err == nil {
		cur, err = sharedTmpStat(parent, fd)
	}
	if err != nil {
		unix.Close(fd)
		return -1, sharedTmpState{}, fmt.Errorf("checking shared tmp %q: %w", path, err)
	}
	return fd, cur, nil
}

// newSharedTmpMount mounts a fresh tmpfs of size bytes on the directory
// fd (at path), by descriptor (fsopen, fsconfig, fsmount, move_mount).
func newSharedTmpMount(fd int, path string, size uint64) error {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if errors.Is(err, unix.EPERM) {
		return errNoMount
	}
	if err != nil {
		return fmt.Errorf("mounting a tmpfs on shared tmp %q: fsopen: %w", path, err)
	}
	defer unix.Close(fsfd)
	for _, o := range [][2]string{
		{"source", "toolbox"}, // what /proc/self/mountinfo shows
		{"size", strconv.FormatUint(size, 10)},
		{"mode", "1777"},
		{"uid", strconv.Itoa(os.Geteuid())},
		{"gid", strconv.Itoa(os.Getegid())},
	} {
		if err := unix.FsconfigSetString(fsfd, o[0], o[1]); err != nil {
			return fmt.Errorf("mounting a tmpfs on shared tmp %q: option %s=%s: %w", path, o[0], o[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("mounting a tmpfs on shared tmp %q: creating it: %w", path, err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return fmt.Errorf("mounting a tmpfs on shared tmp %q: fsmount: %w", path, err)
	}
	defer unix.Close(mfd)
	if err := unix.MoveMount(mfd, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		if errors.Is(err, unix.EPERM) {
			return errNoMount
		}
		return fmt.Errorf("mounting a tmpfs on shared tmp %q: move_mount: %w", path, err)
	}
	return nil
}

// resizeSharedTmp reconfigures the tmpfs mounted on the directory fd (at
// path, in state cur) to want bytes; shrinking it below what it holds is
// refused.
func resizeSharedTmp(fd int, path string, cur sharedTmpState, want uint64) error {
	if cur.used > want {
		return fmt.Errorf("shared tmp %q holds %s, more than the toolbox's tmp_size %s: remove files from it, raise tmp_size in the toolbox file's limits block (then toolbox lock), or unmount it (umount %s; its files are lost)",
			path, FormatSize(cur.used), FormatSize(want), shq.Quote(path))
	}
	pfd, err := unix.Fspick(fd, "", unix.FSPICK_EMPTY_PATH|unix.FSPICK_CLOEXEC|unix.FSPICK_NO_AUTOMOUNT|unix.FSPICK_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.EPERM) {
		return errNoMount
	}
	if err != nil {
		return fmt.Errorf("resizing shared tmp %q: fspick: %w", path, err)
	}
	defer unix.Close(pfd)
	if err := unix.FsconfigSetString(pfd, "size", strconv.FormatUint(want, 10)); err != nil {
		return fmt.Errorf("resizing shared tmp %q to %s: %w", path, FormatSize(want), err)
	}
	if err := unix.FsconfigReconfigure(pfd); err != nil {
		return fmt.Errorf("resizing shared tmp %q to %s (it holds %s): %w", path, FormatSize(want), FormatSize(cur.used), err)
	}
	return nil
}
