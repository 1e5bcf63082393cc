package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// How each mechanism gives the tool its limits before the tool's first
// instruction (Go cannot set a child's rlimits between fork and exec):
//
//   - bwrap: started with --info-fd and --block-fd. bwrap builds the
//     sandbox, then its pid 1 waits on the block descriptor before it
//     forks the tool; toolbox reads that pid from the info descriptor,
//     sets the rlimits on it (prlimit, pinned by a pidfd) and only then
//     releases it. The tool inherits them; bwrap and the sandbox's init
//     run in the call's cgroup from their clone (CLONE_INTO_CGROUP).
//   - landlock: the helper starts the limits wrapper inside its Landlock
//     domain instead of the tool (see helper.Fork).
//   - none: the limits wrapper (helper.RunLimits), started by toolbox.

// limitPlan is what prepare decided about limits for one start.
type limitPlan struct {
	rlimits []rlimit
	cg      *callCgroup
	// blockW (bwrap with rlimits) releases the sandbox once they are set.
	blockW *os.File
}

// bwrapTmpfs mounts a tmpfs at dest, of size bytes when size is not 0
// (bwrap's default is half of the RAM, per mount). At "/" it replaces
// bwrap's own root tmpfs, which --size cannot reach; without a size that
// one is left as it is.
func bwrapTmpfs(size uint64, dest string) []string {
	switch {
	case size > 0:
		return []string{"--size", strconv.FormatUint(size, 10), "--tmpfs", dest}
	case dest == "/":
		return nil
	}
	return []string{"--tmpfs", dest}
}

// bwrapDevShm gives /dev/shm a tmpfs of its own (sized like the others)
// and makes the rest of /dev, another tmpfs of half the RAM that bwrap
// never sizes, read-only. Device nodes stay writable: a read-only mount
// does not stop writes to them.
func bwrapDevShm(size uint64) []string {
	return append(bwrapTmpfs(size, "/dev/shm"), "--remount-ro", "/dev")
}

// planLimits checks that s.Limits can be honoured and creates the call's
// cgroup when one is needed. extra is the number of toolbox's own
// processes that run inside the cgroup (counted by pids.max).
func planLimits(s *Spec, m Mechanism) (*limitPlan, error) {
	l := s.Limits
	if l.IsZero() {
		return &limitPlan{}, nil
	}
	cg := DetectCgroup()
	uid := toolUID(s)
	if r := LimitsRefusal(l, m, uid, cg); r != nil {
		return nil, r
	}
	lp := &limitPlan{rlimits: l.rlimits(m, uid, cg.Pids && cg.Dir != "")}
	if cg.needed(l) {
		var extra uint64
		if m == Bwrap {
			extra = 2 // bwrap and the sandbox's init
		}
		c, err := newCallCgroup(cg, l, extra)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStartFailed, err)
		}
		lp.cg = c
	}
	return lp, nil
}

// releaseBwrap reads the sandbox's pid 1 from bwrap's info descriptor,
// sets rs on it and lets it go on (by writing to the block descriptor).
// bwrapPid, when known (Start), is checked to be its parent; runAs is the
// identity bwrap runs as (nil: toolbox's). It returns the pid (0 when
// bwrap wrote none: it failed before building the sandbox, and its exit
// status tells why). When the limits cannot be set, the sandbox is killed
// before it is released: the tool never runs.
func releaseBwrap(infoR, blockW *os.File, bwrapPid int, runAs *Identity, rs []rlimit) (int, error) {
	defer blockW.Close()
	pid := readBwrapInfo(infoR)
	if pid <= 0 {
		return 0, nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return pid, fmt.Errorf("%w: opening the sandbox's pid 1: %w", ErrStartFailed, err)
	}
	defer unix.Close(fd)
	if st, ok := helper.ReadStat(pid); !ok || bwrapPid > 0 && st.PPID != bwrapPid {
		_ = unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
		return pid, fmt.Errorf("%w: the sandbox's pid 1 (%d) is gone", ErrStartFailed, pid)
	}
	if err := prlimitAs(runAs, pid, rs); err != nil {
		_ = unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
		return pid, fmt.Errorf("%w: limiting the sandbox: %w", ErrStartFailed, err)
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		return pid, fmt.Errorf("%w: releasing the sandbox: %w", ErrStartFailed, err)
	}
	return pid, nil
}

// prlimitAs sets rs on pid, a process running as runAs (nil: as toolbox).
// Lowering another user's limits needs CAP_SYS_RESOURCE, which root does
// not always hold (it is missing on the machines of NOTES.md): then the
// limits are set from a thread of its own that takes runAs's uid and gid
// first (credentials are per thread in Linux; a process may lower the
// limits of a process with its own ids) and dies with its goroutine.
func prlimitAs(runAs *Identity, pid int, rs []rlimit) error {
	if runAs == nil || runAs.UID == uint32(os.Geteuid()) && runAs.GID == uint32(os.Getegid()) {
		return helper.ApplyRlimits(pid, rs)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		g, u := uintptr(runAs.GID), uintptr(runAs.UID)
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, g, g, g); e != 0 {
			errc <- fmt.Errorf("taking gid %d: %w", runAs.GID, e)
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, u, u, u); e != 0 {
			errc <- fmt.Errorf("taking uid %d: %w", runAs.UID, e)
			return
		}
		errc <- helper.ApplyRlimits(pid, rs)
	}()
	return <-errc
}
