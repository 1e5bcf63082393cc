package sandbox

import (
	"fmt"
	"os"
	"runtime"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// startRestricted builds the ruleset, then on a dedicated thread (never
// the thread group leader, which must stay unrestricted so that the tool
// cannot signal the helper) drops capabilities, sets no_new_privs,
// enforces the ruleset and forks the tool. That thread stays alive,
// reaping children, until the tool has exited: the tool's Pdeathsig
// follows the thread that forked it.
func startRestricted(hs *helperSpec) (int, <-chan int, error) {
	if abi := landlockABI(); abi < requiredLandlockABI {
		return 0, nil, fmt.Errorf("landlock ABI %d is required, this kernel offers %d", requiredLandlockABI, abi)
	}
	cfg, err := landlockConfig()
	if err != nil {
		return 0, nil, err
	}
	rulesetFD, flags, err := cfg.NewRulesetFD()
	if err != nil {
		return 0, nil, fmt.Errorf("creating the landlock ruleset: %w", err)
	}
	defer unix.Close(rulesetFD)
	if err := addLandlockRules(rulesetFD, hs); err != nil {
		return 0, nil, err
	}
	if err := helper.TakeLimits(hs); err != nil {
		return 0, nil, err
	}
	if err := addLimitsWrapperRule(rulesetFD, hs); err != nil {
		return 0, nil, err
	}
	if err := helper.CheckScript(hs); err != nil {
		return 0, nil, err
	}
	cred, err := credential(hs.RunAs, Landlock)
	if err != nil {
		return 0, nil, err
	}
	prog, err := filterFromBytes(hs.Seccomp)
	if err != nil {
		return 0, nil, err
	}
	// The helper starts with an empty environment; whatever a Cmd caller
	// appended to it (go-plugin's handshake variables) is for the tool.
	env := append(hs.Env, os.Environ()...)
	started := make(chan startResult, 1)
	exited := make(chan int, 1) // the tool's exit code
	go onNonLeaderThread(func() {
		if err := unshareIPC(); err != nil {
			started <- startResult{Err: err}
			return
		}
		if err := dropCapabilities(); err != nil {
			started <- startResult{Err: err}
			return
		}
		if err := helper.DropLimitsCap(hs); err != nil {
			started <- startResult{Err: err}
			return
		}
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			started <- startResult{Err: fmt.Errorf("setting no_new_privs: %w", err)}
			return
		}
		if err := llsys.LandlockRestrictSelf(rulesetFD, flags); err != nil {
			started <- startResult{Err: fmt.Errorf("enforcing the landlock ruleset: %w", err)}
			return
		}
		if err := loadFilter(prog); err != nil {
			started <- startResult{Err: err}
			return
		}
		helper.ForkAndReap(hs, env, cred, started, exited)
	})
	r := <-started
	return r.PID, exited, r.Err
}

// Landlock rights granted on paths. Writable directories get everything
// the configuration handles except creating device nodes (a root tool
// could otherwise mknod the host's disk inside its writable directory and
// read it) and device ioctls; refer (moving files between directories) is
// safe to grant, Landlock never lets a move widen access.
const (
	readRights  = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	writeRights = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile |
		llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo |
		llsys.AccessFSMakeSym | llsys.AccessFSRefer | llsys.AccessFSTruncate
	// fileRights are the rights that apply to a file (not a directory).
	fileRights = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSTruncate
)

// addLandlockRules opens every granted path without following symlinks
// (they were resolved by the parent: a link now means a swap) and adds it
// to the ruleset by that descriptor, so the rule covers exactly the
// checked inode. Files get file rights only (directory rights on a file
// are an error in Landlock).
func addLandlockRules(rulesetFD int, hs *helperSpec) error {
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
		attr := llsys.PathBeneathAttr{ParentFd: int(f.Fd()), AllowedAccess: rights}
		err = llsys.LandlockAddPathBeneathRule(rulesetFD, &attr, 0)
		f.Close()
		if err != nil {
			return fmt.Errorf("adding landlock rule for %q: %w", g.Path, err)
		}
	}
	return nil
}

// grantFile is the descriptor the parent opened for g, or g.Path opened
// the same way.
func grantFile(g helperGrant) (*os.File, error) {
	if g.FD > 2 {
		return os.NewFile(uintptr(g.FD), g.Path), nil
	}
	return openNoFollow(g.Path)
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
