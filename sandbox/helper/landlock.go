package helper

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RequiredLandlockABI is the fixed Landlock ABI the landlock mechanism
// needs: the filesystem rights of ABI 5 (including truncate and device
// ioctls) and the scopes of ABI 6, which stop the tool from signalling
// any process outside its sandbox (its helper, toolbox, the rest of the
// host) and from connecting to an abstract unix socket made outside it.
// Kernels without it are refused, never half-served.
const RequiredLandlockABI = 6

// LandlockABI is the ABI version this kernel reports (0 without Landlock).
func LandlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

// Ruleset is the Landlock ruleset a landlock spec enforces: the
// attributes of landlock_create_ruleset(2) and the flags of
// landlock_restrict_self(2), which toolbox computes with go-landlock
// (package sandbox's landlockConfig). The helper makes the system calls
// itself so that it links no cgo (go-landlock's syscall package links
// libcap's psx).
type Ruleset struct {
	HandledFS     uint64 `json:"handled_fs"`
	HandledNet    uint64 `json:"handled_net,omitempty"`
	Scoped        uint64 `json:"scoped"`
	RestrictFlags uint32 `json:"restrict_flags,omitempty"`
}

// Landlock rights granted on paths. Writable directories get everything
// the configuration handles except creating device nodes (a root tool
// could otherwise mknod the host's disk inside its writable directory and
// read it) and device ioctls; refer (moving files between directories) is
// safe to grant, Landlock never lets a move widen access.
const (
	readRights  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	writeRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	// fileRights are the rights that apply to a file (not a directory).
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
)

// StartRestricted is the helper's start of a landlock tool: it builds the
// ruleset, then on a dedicated thread (never the thread group leader,
// which must stay unrestricted so that the tool cannot signal the helper)
// unshares IPC, drops capabilities, sets no_new_privs, enforces the
// ruleset, loads the tool's seccomp filter and forks the tool. That thread
// stays alive, reaping children, until the tool has exited: the tool's
// Pdeathsig follows the thread that forked it.
func StartRestricted(hs *Spec) (int, <-chan int, error) {
	if abi := LandlockABI(); abi < RequiredLandlockABI {
		return 0, nil, fmt.Errorf("landlock ABI %d is required, this kernel offers %d", RequiredLandlockABI, abi)
	}
	if hs.Ruleset == nil || hs.Ruleset.HandledFS == 0 {
		return 0, nil, errors.New("incomplete spec: no landlock ruleset")
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: hs.Ruleset.HandledFS, Handled_access_net: hs.Ruleset.HandledNet, Scoped: hs.Ruleset.Scoped}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return 0, nil, fmt.Errorf("creating the landlock ruleset: %w", e)
	}
	rulesetFD := int(r)
	defer unix.Close(rulesetFD)
	if err := addLandlockRules(rulesetFD, hs); err != nil {
		return 0, nil, err
	}
	if err := TakeLimits(hs); err != nil {
		return 0, nil, err
	}
	if err := addLimitsWrapperRule(rulesetFD, hs); err != nil {
		return 0, nil, err
	}
	if err := CheckScript(hs); err != nil {
		return 0, nil, err
	}
	cred, err := Credential(hs.RunAs)
	if err != nil {
		return 0, nil, err
	}
	prog, err := FilterFromBytes(hs.Seccomp)
	if err != nil {
		return 0, nil, err
	}
	// The helper starts with an empty environment; whatever a Cmd caller
	// appended to it (go-plugin's handshake variables) is for the tool.
	env := append(hs.Env, os.Environ()...)
	started := make(chan StartResult, 1)
	exited := make(chan int, 1) // the tool's exit code
	go onNonLeaderThread(func() {
		if err := UnshareIPC(); err != nil {
			started <- StartResult{Err: err}
			return
		}
		if err := dropCapabilities(); err != nil {
			started <- StartResult{Err: err}
			return
		}
		if err := DropLimitsCap(hs); err != nil {
			started <- StartResult{Err: err}
			return
		}
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			started <- StartResult{Err: fmt.Errorf("setting no_new_privs: %w", err)}
			return
		}
		if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rulesetFD), uintptr(hs.Ruleset.RestrictFlags), 0); e != 0 {
			started <- StartResult{Err: fmt.Errorf("enforcing the landlock ruleset: %w", e)}
			return
		}
		if err := LoadFilter(prog); err != nil {
			started <- StartResult{Err: err}
			return
		}
		ForkAndReap(hs, env, cred, started, exited)
	})
	res := <-started
	return res.PID, exited, res.Err
}

// addPathRule adds a path-beneath rule for the file open at fd.
func addPathRule(rulesetFD, fd int, rights uint64) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// addLandlockRules opens every granted path without following symlinks
// (they were resolved by the parent: a link now means a swap) and adds it
// to the ruleset by that descriptor, so the rule covers exactly the
// checked inode. Files get file rights only (directory rights on a file
// are an error in Landlock).
func addLandlockRules(rulesetFD int, hs *Spec) error {
	for _, g := range hs.Grants {
		f, err := grantFile(g)
		if err != nil {
			return fmt.Errorf("opening granted path: %w", err)
		}
		rights := uint64(readRights)
		if g.Write {
			rights |= writeRights
		}
		if !g.Dir {
			rights &= fileRights
		}
		err = addPathRule(rulesetFD, int(f.Fd()), rights)
		f.Close()
		if err != nil {
			return fmt.Errorf("adding landlock rule for %q: %w", g.Path, err)
		}
	}
	return nil
}

// grantFile is the descriptor the parent opened for g, or g.Path opened
// the same way.
func grantFile(g Grant) (*os.File, error) {
	if g.FD > 2 {
		return os.NewFile(uintptr(g.FD), g.Path), nil
	}
	return OpenNoFollow(g.Path)
}

// addLimitsWrapperRule lets the Landlock domain execute this binary (the
// limits wrapper) when hs has limits the helper does not hold itself. The
// rule is added on the running binary's own inode (/proc/self/exe),
// whatever became of its path.
func addLimitsWrapperRule(rulesetFD int, hs *Spec) error {
	if len(hs.Rlimits) == 0 || hs.SelfLimited {
		return nil
	}
	fd, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening this binary for the limits wrapper: %w", err)
	}
	defer unix.Close(fd)
	if err := addPathRule(rulesetFD, fd, unix.LANDLOCK_ACCESS_FS_EXECUTE|unix.LANDLOCK_ACCESS_FS_READ_FILE); err != nil {
		return fmt.Errorf("adding the landlock rule for the limits wrapper: %w", err)
	}
	return nil
}

// OpenNoFollow opens p as a path descriptor, refusing any symlink on the
// way (RESOLVE_NO_SYMLINKS).
func OpenNoFollow(p string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// dropCapabilities makes sure the tool this thread execs has no
// capabilities, even as root (Landlock leaves root's capabilities alone:
// module loading, raw I/O, chown, mknod would stay open). With the
// securebit NOROOT (locked) uid 0 gains nothing at exec, no_new_privs
// stops setuid binaries and file capabilities, and the inheritable and
// ambient sets are emptied. The effective set is kept: the forked child
// still needs CAP_SETUID/CAP_SETGID to switch to run_as, and exec clears
// it. Without root there is nothing to drop (and no right to drop it).
// One prctl instead of dropping the bounding set capability by capability
// (42 system calls).
func dropCapabilities() error {
	if os.Geteuid() != 0 {
		return nil
	}
	const (
		secbitNoroot       = 1 << 0 // linux/securebits.h: SECURE_NOROOT
		secbitNorootLocked = 1 << 1 // SECURE_NOROOT_LOCKED
	)
	const bits = secbitNoroot | secbitNorootLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("setting securebits: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	if data[0].Inheritable|data[1].Inheritable != 0 {
		data[0].Inheritable, data[1].Inheritable = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("clearing inheritable capabilities: %w", err)
		}
	}
	return nil
}

// onNonLeaderThread runs f on a locked OS thread that is not the thread
// group leader. The goroutine is never unlocked: when f returns the thread
// (restricted by f) ends with it instead of serving other goroutines.
func onNonLeaderThread(f func()) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		f()
		return
	}
	// Keep the leader busy so that the new goroutine lands elsewhere.
	done := make(chan struct{})
	go func() {
		onNonLeaderThread(f)
		close(done)
	}()
	<-done
}

// HasCapSysAdmin reports whether the calling thread has CAP_SYS_ADMIN in
// its effective set.
func HasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	const c = unix.CAP_SYS_ADMIN
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// UnshareIPC gives the calling thread (and so the tool it forks) a new
// IPC namespace: the host's System V shared memory, semaphores and
// message queues and its POSIX message queues are out of reach, which
// Landlock does not cover. It needs CAP_SYS_ADMIN; without it (toolbox
// not root) nothing is done: the tool then runs as toolbox's own user and
// reaches only the IPC objects that user could (DESIGN.md §6).
func UnshareIPC() error {
	if !HasCapSysAdmin() {
		return nil
	}
	if err := unix.Unshare(unix.CLONE_NEWIPC); err != nil {
		return fmt.Errorf("creating an IPC namespace: %w", err)
	}
	return nil
}

// LoadFilter installs prog on the calling thread only (no TSYNC): every
// child forked from the thread inherits it. The thread needs
// no_new_privs or CAP_SYS_ADMIN.
func LoadFilter(prog []unix.SockFilter) error {
	if len(prog) == 0 {
		return errors.New("loading the seccomp filter: empty program")
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return fmt.Errorf("loading the seccomp filter: %w", e)
	}
	return nil
}

// FilterFromBytes decodes a compiled seccomp filter passed as bytes
// (package sandbox's bpfBytes: the instructions in native byte order).
func FilterFromBytes(b []byte) ([]unix.SockFilter, error) {
	if len(b) == 0 || len(b)%8 != 0 {
		return nil, fmt.Errorf("the seccomp filter has %d bytes, not a whole number of instructions", len(b))
	}
	prog := make([]unix.SockFilter, len(b)/8)
	if err := binary.Read(bytes.NewReader(b), binary.NativeEndian, prog); err != nil {
		return nil, fmt.Errorf("decoding the seccomp filter: %w", err)
	}
	return prog, nil
}
