package helper

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Run is the sandbox helper: it reads its spec (fd 3), becomes a child
// subreaper and starts the tool with StartPlain (a Plain spec) or
// StartRestricted (landlock). It stays the tool's parent, and when the
// tool ends kills every remaining descendant and returns the tool's exit
// code (128+signal when it was killed); when its parent dies first (its
// parent-death signal) it kills the tool and everything below it. Setup
// errors go to the status descriptor (or stderr) and return
// ExitSetupFailed.
func Run() int {
	hs, status, err := readSpec()
	if err != nil {
		report(status, err)
		return ExitSetupFailed
	}
	sigs := make(chan os.Signal, 4)
	// The tool shares the helper's process group, so a group signal
	// reaches it directly; the helper only has to survive it.
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if os.Getppid() != hs.ParentPID {
		report(status, errors.New("toolbox exited before the tool started"))
		return ExitSetupFailed
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		report(status, fmt.Errorf("becoming child subreaper: %w", err))
		return ExitSetupFailed
	}
	start := StartRestricted
	if hs.Plain {
		start = StartPlain
	}
	pid, exited, err := start(hs)
	if err != nil {
		report(status, err)
		return ExitSetupFailed
	}
	if status != nil {
		_, _ = status.WriteString("ok\n")
		status.Close()
	}
	for {
		select {
		case code := <-exited:
			ReapDescendants()
			return code
		case sig := <-sigs:
			if os.Getppid() == hs.ParentPID {
				continue
			}
			// Our parent died (Pdeathsig): nobody will stop the tool.
			_ = syscall.Kill(pid, syscall.SIGKILL)
			ReapDescendants()
			n, _ := sig.(syscall.Signal)
			return 128 + int(n)
		}
	}
}

func readSpec() (*Spec, *os.File, error) {
	MarkCloexec()
	var hs Spec
	status, err := ReadSpecFD(&hs, func() int { return hs.StatusFD })
	if err != nil {
		return nil, status, err
	}
	if hs.Path == "" || len(hs.Argv) == 0 || hs.Dir == "" && !hs.Plain {
		return nil, status, errors.New("incomplete spec")
	}
	return &hs, status, nil
}

func report(status *os.File, err error) {
	msg := StatusLine(err)
	if status != nil {
		_, _ = status.WriteString(msg + "\n")
		status.Close()
		return
	}
	fmt.Fprintf(os.Stderr, "toolbox sandbox helper: %s\n", msg)
}

// StartPlain is the helper's start of an unconfined tool: from a locked
// thread that stays alive, reaping, until the tool has exited (the tool's
// parent-death signal follows that thread).
func StartPlain(hs *Spec) (int, <-chan int, error) {
	cred, err := Credential(hs.RunAs)
	if err != nil {
		return 0, nil, err
	}
	if err := CheckScript(hs); err != nil {
		return 0, nil, err
	}
	if err := TakeLimits(hs); err != nil {
		return 0, nil, err
	}
	started := make(chan StartResult, 1)
	exited := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := DropLimitsCap(hs); err != nil {
			started <- StartResult{Err: err}
			return
		}
		ForkAndReap(hs, append(hs.Env, os.Environ()...), cred, started, exited)
	}()
	r := <-started
	return r.PID, exited, r.Err
}

// StartResult is the outcome of the helper's fork of the tool.
type StartResult struct {
	PID int
	Err error
}

// ForkAndReap starts the tool in the helper's session and process group,
// reports it on started, then reaps children (the tool and the orphans the
// subreaper inherits) until the tool has exited, whose code it sends on
// exited. It runs on the thread that must stay alive meanwhile.
func ForkAndReap(hs *Spec, env []string, cred *syscall.Credential, started chan<- StartResult, exited chan<- int) {
	pid, err := Fork(hs, env, &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred})
	if err != nil {
		started <- StartResult{Err: &os.PathError{Op: "exec", Path: hs.Path, Err: err}}
		return
	}
	started <- StartResult{PID: pid}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // only once our parent died: Run reaps too, and no longer reads exited
			exited <- ExitSetupFailed
			return
		}
		if got == pid {
			exited <- ExitCode(ws)
			return
		}
	}
}

// Credential returns the credentials to start the tool with for id: nil
// when id is nil or already ours (nothing to switch). Without root it
// fails (only root can become another user; toolbox refuses such a tool
// before it starts the helper).
func Credential(id *Identity) (*syscall.Credential, error) {
	if id == nil {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		if IsSelf(id) {
			return nil, nil
		}
		return nil, fmt.Errorf("running as uid %d, not root, so unable to switch to uid %d gid %d", os.Geteuid(), id.UID, id.GID)
	}
	return &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: slices.Clone(id.Groups)}, nil
}

// IsSelf reports whether id is exactly this process's identity.
func IsSelf(id *Identity) bool {
	if int(id.UID) != os.Getuid() || int(id.GID) != os.Getgid() {
		return false
	}
	gs, err := os.Getgroups()
	if err != nil {
		return false
	}
	mine := make([]uint32, 0, len(gs)+1)
	for _, g := range gs {
		mine = append(mine, uint32(g))
	}
	want := slices.Clone(id.Groups)
	for _, s := range [][]uint32{mine, want} {
		slices.Sort(s)
	}
	mine = slices.Compact(mine)
	want = slices.Compact(want)
	// The kernel may or may not list the primary gid among the groups.
	drop := func(s []uint32) []uint32 { return slices.DeleteFunc(s, func(g uint32) bool { return g == id.GID }) }
	return slices.Equal(drop(mine), drop(want))
}

// ExecPath is what the tool is executed by: the checked descriptor itself
// for a binary (close-on-exec since the helper started, so the tool
// inherits nothing), the resolved path for a script, or Path without a
// descriptor.
func ExecPath(hs *Spec) string {
	if hs.ExeFD > 2 && !hs.Script {
		return "/proc/self/fd/" + strconv.Itoa(hs.ExeFD)
	}
	return hs.Path
}

// CheckScript makes sure a script run by its path is still the file the
// parent checked (it also checked that only trusted users could swap it).
func CheckScript(hs *Spec) error {
	if hs.ExeFD <= 2 || !hs.Script {
		return nil
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(hs.ExeFD, &a); err != nil {
		return fmt.Errorf("checking the executable: %w", err)
	}
	if err := unix.Stat(hs.Path, &b); err != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		return fmt.Errorf("%q was replaced after its check", hs.Path)
	}
	return nil
}

// ReapDescendants kills and reaps everything below the helper. As a child
// subreaper it inherits every orphan, so no child left means no
// descendant left.
func ReapDescendants() {
	self := os.Getpid()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR) || pid > 0:
			continue
		case err != nil: // ECHILD: done
			return
		}
		KillDescendants(self)
		_, _ = syscall.Wait4(-1, &ws, 0, nil)
	}
}

// ExitCode is a wait status as a shell reports it: the exit code, or
// 128+signal.
func ExitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// MarkCloexec sets close-on-exec on every descriptor from 3 up, with
// close_range(2) where the kernel has it (5.11+), else one by one.
func MarkCloexec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// FeedPipe returns the read end of a pipe that will deliver data then EOF.
// A writer goroutine ends once the data is read or the read end is closed
// everywhere, so a child that never starts leaves nothing behind.
func FeedPipe(data []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go func() {
		_, _ = w.Write(data)
		w.Close()
	}()
	return r, nil
}
