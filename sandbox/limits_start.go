package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
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
//     domain instead of the tool (see helperFork).
//   - none: the limits wrapper (limitexec.go), started by toolbox.

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

// helperFork starts the tool from the helper's forking thread (the
// restricted one under landlock). Without limits, or when the helper
// holds the limits itself (takeLimits: the tool inherits them at fork, and
// this thread dropped CAP_SYS_RESOURCE first), it forks the tool itself.
// Otherwise it forks the limits wrapper (this binary, see limitexec.go),
// which sets them, joins the call's cgroup and execs the tool in its
// place: small memory limits on the helper, a Go program whose own
// mappings reach about 140 MiB (thread stacks included), would leave it
// unable to map memory, since only CAP_SYS_RESOURCE could raise its limits
// back and root does not always hold it. The wrapper runs inside the
// Landlock domain and without capabilities, with a rule that lets it
// execute this binary (addLimitsWrapperRule), which gives the tool nothing
// its own code could not do.
func helperFork(hs *helperSpec, env []string, sys *syscall.SysProcAttr) (int, error) {
	if len(hs.Rlimits) == 0 || hs.selfLimited {
		return syscall.ForkExec(execPath(hs), hs.Argv, &syscall.ProcAttr{Dir: hs.Dir, Env: env, Files: []uintptr{0, 1, 2}, Sys: sys})
	}
	ls := limitsSpec{Path: hs.Path, Argv: hs.Argv, Env: env, Rlimits: hs.Rlimits}
	files := []uintptr{0, 1, 2, 0}
	if hs.ProcsFD > 0 {
		ls.ProcsFD = len(files)
		files = append(files, uintptr(hs.ProcsFD))
	}
	if hs.ExeFD > 2 && !hs.Script {
		// The wrapper runs the checked descriptor too (execPath).
		ls.ExeFD = len(files)
		files = append(files, uintptr(hs.ExeFD))
	}
	data, err := json.Marshal(ls)
	if err != nil {
		return 0, fmt.Errorf("encoding the limits wrapper's spec: %w", err)
	}
	specR, err := feedPipe(data)
	if err != nil {
		return 0, fmt.Errorf("passing the limits wrapper's spec: %w", err)
	}
	defer specR.Close()
	files[3] = specR.Fd()
	return syscall.ForkExec("/proc/self/exe", []string{os.Args[0], limitsArg}, &syscall.ProcAttr{Dir: hs.Dir, Env: []string{}, Files: files, Sys: sys})
}

// helperDataFloor is the least memory limit (RLIMIT_DATA) the helper
// takes on itself: about seven times what it maps (140 MiB measured with
// nine threads, each thread's stack counted), so that it can still start
// threads and reap under the limit. Below it the limits wrapper applies
// the limits to the tool alone.
const helperDataFloor = 1 << 30

// holdsLimits says whether the helper can hold hs.Rlimits itself for as
// long as the tool runs, the tool inheriting them at fork: saving the
// limits wrapper, a Go process start per call. It can when no limit would
// get in its own way: RLIMIT_CORE and RLIMIT_FSIZE (the helper writes
// only to pipes), RLIMIT_NOFILE of MinOpenFiles or more (it opens a few
// descriptors at a time), RLIMIT_DATA of helperDataFloor or more. RLIMIT_CPU
// (counted against the helper's own time too), RLIMIT_NPROC and joining a
// cgroup (ProcsFD) go through the wrapper.
func holdsLimits(hs *helperSpec) bool {
	if len(hs.Rlimits) == 0 || hs.ProcsFD > 0 {
		return false
	}
	for _, r := range hs.Rlimits {
		switch r.Resource {
		case unix.RLIMIT_CORE, unix.RLIMIT_FSIZE:
		case unix.RLIMIT_NOFILE:
			if r.Cur < MinOpenFiles {
				return false
			}
		case unix.RLIMIT_DATA:
			if r.Cur < helperDataFloor {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// takeLimits sets hs.Rlimits on the helper process when it can hold them
// (holdsLimits), before it forks the tool; the forking thread must then
// drop CAP_SYS_RESOURCE (dropSysResource) before the fork, so that the
// tool cannot raise a hard limit. Limits it cannot hold are left to the
// limits wrapper (helperFork).
func takeLimits(hs *helperSpec) error {
	if !holdsLimits(hs) {
		return nil
	}
	if err := applyRlimits(0, hs.Rlimits); err != nil {
		return fmt.Errorf("limiting the tool: %w", err)
	}
	hs.selfLimited = true
	return nil
}

// addLimitsWrapperRule lets the Landlock domain execute this binary (the
// limits wrapper) when hs has limits the helper does not hold itself. The
// rule is added on the running binary's own inode (/proc/self/exe),
// whatever became of its path.
func addLimitsWrapperRule(rulesetFD int, hs *helperSpec) error {
	if len(hs.Rlimits) == 0 || hs.selfLimited {
		return nil
	}
	fd, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening this binary for the limits wrapper: %w", err)
	}
	defer unix.Close(fd)
	attr := llsys.PathBeneathAttr{ParentFd: fd, AllowedAccess: llsys.AccessFSExecute | llsys.AccessFSReadFile}
	if err := llsys.LandlockAddPathBeneathRule(rulesetFD, &attr, 0); err != nil {
		return fmt.Errorf("adding the landlock rule for the limits wrapper: %w", err)
	}
	return nil
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
	if st, ok := readStat(pid); !ok || bwrapPid > 0 && st.ppid != bwrapPid {
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
		return applyRlimits(pid, rs)
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
		errc <- applyRlimits(pid, rs)
	}()
	return <-errc
}

// dropLimitsCap drops CAP_SYS_RESOURCE from the calling thread, the one
// that forks the tool, when the helper holds the tool's limits itself
// (takeLimits): the tool inherits this thread's capabilities, and with
// CAP_SYS_RESOURCE a root tool could raise its hard limits. The thread
// must never serve another goroutine afterwards (it is locked and ends
// with its goroutine).
func dropLimitsCap(hs *helperSpec) error {
	if !hs.selfLimited {
		return nil
	}
	if err := dropSysResource(); err != nil {
		return fmt.Errorf("limiting the tool: %w", err)
	}
	return nil
}
