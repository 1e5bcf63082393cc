package helper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Fork starts the tool from the helper's forking thread (the restricted
// one under landlock). Without limits, or when the helper holds the
// limits itself (TakeLimits: the tool inherits them at fork, and this
// thread dropped CAP_SYS_RESOURCE first), it forks the tool itself.
// Otherwise it forks the limits wrapper (this binary, RunLimits), which
// sets them, joins the call's cgroup and execs the tool in its place:
// small memory limits on the helper, a Go program whose own mappings reach
// about 140 MiB (thread stacks included), would leave it unable to map
// memory, since only CAP_SYS_RESOURCE could raise its limits back and root
// does not always hold it. Under landlock the wrapper runs inside the
// domain and without capabilities, with a rule that lets it execute this
// binary, which gives the tool nothing its own code could not do.
func Fork(hs *Spec, env []string, sys *syscall.SysProcAttr) (int, error) {
	if len(hs.Rlimits) == 0 || hs.SelfLimited {
		return syscall.ForkExec(ExecPath(hs), hs.Argv, &syscall.ProcAttr{Dir: hs.Dir, Env: env, Files: []uintptr{0, 1, 2}, Sys: sys})
	}
	ls := LimitsSpec{Path: hs.Path, Argv: hs.Argv, Env: env, Rlimits: hs.Rlimits}
	files := []uintptr{0, 1, 2, 0}
	if hs.ProcsFD > 0 {
		ls.ProcsFD = len(files)
		files = append(files, uintptr(hs.ProcsFD))
	}
	if hs.ExeFD > 2 && !hs.Script {
		// The wrapper runs the checked descriptor too (ExecPath).
		ls.ExeFD = len(files)
		files = append(files, uintptr(hs.ExeFD))
	}
	data, err := json.Marshal(ls)
	if err != nil {
		return 0, fmt.Errorf("encoding the limits wrapper's spec: %w", err)
	}
	specR, err := FeedPipe(data)
	if err != nil {
		return 0, fmt.Errorf("passing the limits wrapper's spec: %w", err)
	}
	defer specR.Close()
	files[3] = specR.Fd()
	return syscall.ForkExec("/proc/self/exe", []string{os.Args[0], LimitsArg}, &syscall.ProcAttr{Dir: hs.Dir, Env: []string{}, Files: files, Sys: sys})
}

// DataFloor is the least memory limit (RLIMIT_DATA) the helper takes on
// itself: about seven times what it maps (140 MiB measured with nine
// threads, each thread's stack counted), so that it can still start
// threads and reap under the limit. Below it the limits wrapper applies
// the limits to the tool alone.
const DataFloor = 1 << 30

// holdsLimits says whether the helper can hold hs.Rlimits itself for as
// long as the tool runs, the tool inheriting them at fork: saving the
// limits wrapper, a process start per call. It can when no limit would
// get in its own way: RLIMIT_CORE and RLIMIT_FSIZE (the helper writes
// only to pipes), RLIMIT_NOFILE of MinOpenFiles or more (it opens a few
// descriptors at a time), RLIMIT_DATA of DataFloor or more. RLIMIT_CPU
// (counted against the helper's own time too), RLIMIT_NPROC and joining a
// cgroup (ProcsFD) go through the wrapper.
func holdsLimits(hs *Spec) bool {
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
			if r.Cur < DataFloor {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// TakeLimits sets hs.Rlimits on the helper process when it can hold them
// (holdsLimits), before it forks the tool; the forking thread must then
// drop CAP_SYS_RESOURCE (DropLimitsCap) before the fork, so that the tool
// cannot raise a hard limit. Limits it cannot hold are left to the limits
// wrapper (Fork).
func TakeLimits(hs *Spec) error {
	if !holdsLimits(hs) {
		return nil
	}
	if err := ApplyRlimits(0, hs.Rlimits); err != nil {
		return fmt.Errorf("limiting the tool: %w", err)
	}
	hs.SelfLimited = true
	return nil
}

// DropLimitsCap drops CAP_SYS_RESOURCE from the calling thread, the one
// that forks the tool, when the helper holds the tool's limits itself
// (TakeLimits): the tool inherits this thread's capabilities, and with
// CAP_SYS_RESOURCE a root tool could raise its hard limits. The thread
// must never serve another goroutine afterwards (it is locked and ends
// with its goroutine).
func DropLimitsCap(hs *Spec) error {
	if !hs.SelfLimited {
		return nil
	}
	if err := DropSysResource(); err != nil {
		return fmt.Errorf("limiting the tool: %w", err)
	}
	return nil
}

// ApplyRlimits sets rs on the process pid (0 = this process).
func ApplyRlimits(pid int, rs []Rlimit) error {
	for _, r := range rs {
		lim := unix.Rlimit{Cur: r.Cur, Max: r.Max}
		// unix.Prlimit on this process also tells os/exec not to restore
		// the original RLIMIT_NOFILE in children (the Go runtime raises
		// its own soft limit at start and undoes that at fork).
		if err := unix.Prlimit(pid, r.Resource, &lim, nil); err != nil {
			return fmt.Errorf("setting %s to %d: %w", rlimitName(r.Resource), r.Cur, err)
		}
	}
	return nil
}

func rlimitName(r int) string {
	switch r {
	case unix.RLIMIT_CORE:
		return "RLIMIT_CORE"
	case unix.RLIMIT_DATA:
		return "RLIMIT_DATA"
	case unix.RLIMIT_FSIZE:
		return "RLIMIT_FSIZE"
	case unix.RLIMIT_NOFILE:
		return "RLIMIT_NOFILE"
	case unix.RLIMIT_CPU:
		return "RLIMIT_CPU"
	case unix.RLIMIT_NPROC:
		return "RLIMIT_NPROC"
	}
	return fmt.Sprintf("rlimit %d", r)
}

// DropSysResource removes CAP_SYS_RESOURCE from this thread's bounding,
// inheritable, permitted and effective sets, so that a root program it
// execs cannot raise a hard limit. Without root there is nothing to drop;
// a thread that holds no capability at all and whose uid 0 gains none at
// exec (securebit NOROOT, as in the landlock helper's domain) has nothing
// to drop either.
func DropSysResource() error {
	if os.Geteuid() != 0 {
		return nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	inBounding, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_RESOURCE, 0, 0, 0)
	if inBounding == 1 {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_RESOURCE, 0, 0, 0)
		if err != nil && !norootLocked() {
			return fmt.Errorf("dropping CAP_SYS_RESOURCE from the bounding set: %w", err)
		}
	}
	const bit = uint32(1) << (unix.CAP_SYS_RESOURCE % 32)
	d := &data[unix.CAP_SYS_RESOURCE/32]
	if (d.Effective|d.Permitted|d.Inheritable)&bit == 0 {
		return nil
	}
	d.Effective &^= bit
	d.Permitted &^= bit
	d.Inheritable &^= bit
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping CAP_SYS_RESOURCE: %w", err)
	}
	return nil
}

// norootLocked says whether uid 0 gains no capability at exec on this
// thread (securebits NOROOT and NOROOT_LOCKED).
func norootLocked() bool {
	bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	return err == nil && bits&3 == 3
}

// RunLimits is the limits wrapper: it reads its LimitsSpec (fd 3), sets
// the limits on itself, joins the call's cgroup, drops CAP_SYS_RESOURCE
// and execs the tool in its place (same pid, session and group). It
// returns only when the tool could not be started: 127 when the
// executable is missing, 126 when it cannot be executed, else
// ExitSetupFailed.
func RunLimits() int {
	// Capabilities are per thread, and the thread that execs is the one
	// whose capabilities the tool inherits.
	runtime.LockOSThread()
	MarkCloexec()
	var ls LimitsSpec
	status, err := ReadSpecFD(&ls, func() int { return ls.StatusFD })
	if err == nil {
		err = ls.setUp()
	}
	if err == nil {
		run := ls.Path
		if ls.ExeFD > 2 {
			run = "/proc/self/fd/" + strconv.Itoa(ls.ExeFD)
		}
		err = syscall.Exec(run, ls.Argv, append(ls.Env, os.Environ()...))
		err = &os.PathError{Op: "exec", Path: ls.Path, Err: err}
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	if status != nil {
		_, _ = status.WriteString(StatusLine(err) + "\n") // as the helper reports
		status.Close()
	} else {
		fmt.Fprintf(os.Stderr, "toolbox: starting the tool: %s\n", err)
	}
	switch {
	case errors.Is(errno, syscall.ENOENT):
		return 127
	case errors.Is(errno, syscall.EACCES), errors.Is(errno, syscall.ENOEXEC):
		return 126
	}
	return ExitSetupFailed
}

func (ls *LimitsSpec) setUp() error {
	if ls.Path == "" || len(ls.Argv) == 0 {
		return errors.New("incomplete spec")
	}
	if err := ApplyRlimits(0, ls.Rlimits); err != nil {
		return err
	}
	if ls.ProcsFD > 0 {
		f := os.NewFile(uintptr(ls.ProcsFD), "cgroup.procs")
		_, err := f.WriteString("0")
		f.Close()
		if err != nil {
			return fmt.Errorf("joining the call's cgroup: %w", err)
		}
	}
	return DropSysResource()
}
