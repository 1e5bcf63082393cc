package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// Command is the child to start: Path is the executable (absolute), Args
// are the arguments after argv[0], Env is the complete environment (nothing
// of the caller's is added), Dir the working directory ("" = the caller's
// under None; the tool's directory, or /, under a sandbox, where Dir must
// lie inside a granted path). Stdin, when nil, is an empty pipe that is
// closed at once. A terminal is never handed to the child, so it cannot
// type into the operator's terminal (TIOCSTI): as Stdout or Stderr it is
// reached through a pipe that toolbox copies; as Stdin it is not read at
// all (the child gets the empty pipe: tools take their input as
// arguments, and a copy from a terminal could never be interrupted).
//
// Output: an *os.File that is not a terminal is handed to the child as it
// is (the caller reads it). Any other Writer gets the child's output
// through a pipe toolbox reads (see Process.OutputCut): every byte written
// before the child exited reaches it before Done is closed. Writes to it
// come from one goroutine per stream; an error from it stops the copy to
// it, never the reading (the child is never blocked by a failed reader).
//
// Exe, when set, is Path opened and checked by the caller
// (OpenExecutable): the child is executed from that descriptor, never from
// Path again (DESIGN.md §6). Under bwrap the descriptor is bound over the
// executable's path inside the sandbox; under None and Landlock an ELF
// binary is executed through /proc/self/fd with the descriptor
// close-on-exec; a script, whose interpreter opens it again by name, is
// executed by its resolved path after checking that nobody but root or
// toolbox's own user could have swapped it (Executable.swapProof) and
// that the path still names the checked file. The caller closes Exe once
// the child started. nil executes Path as it is.
type Command struct {
	Path   string
	Exe    *Executable
	Args   []string
	Env    []string
	Dir    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Process is a started child. It is the leader of its own session and
// process group, so Signal reaches every member of the group.
type Process struct {
	cmd  *exec.Cmd
	mech Mechanism
	done chan struct{}
	err  error

	mu     sync.Mutex
	exited bool // the child is a zombie or reaped: its pid must not be signalled

	info     chan struct{} // closed once innerPid is known (bwrap)
	innerPid int           // bwrap: the sandbox's pid 1 as seen from the host

	reaper    bool       // the child is the sandbox helper (landlock, None)
	outs      []*outPipe // the output pipes toolbox reads
	cut       bool       // set before done: see OutputCut
	startTime uint64     // the child's start time, set before Start returns
}

// ErrStartFailed wraps errors from starting the child (not found, not
// executable, the landlock helper failing to restrict itself). Declarations
// that cannot be honoured are *RefusalError instead.
var ErrStartFailed = errors.New("start failed")

// waitDelay bounds how long Wait waits for os/exec's copy of a Stdin that
// is not an *os.File once the child has exited (the child reads nothing
// more). Output is not os/exec's: see outPipe.
const waitDelay = 500 * time.Millisecond

// prepared is a confined, unstarted child and what its parent must do
// around the start.
type prepared struct {
	cmd     *exec.Cmd
	mech    Mechanism
	spec    *Spec      // for PrepareForkThread, and who bwrap runs as (RunAs)
	closers []*os.File // the child's ends of pipes and bind descriptors
	infoR   *os.File   // bwrap --info-fd, read end (Start, or limits)
	statusR *os.File   // sandbox helper status, read end (Start only)
	limitsR *os.File   // none limits wrapper status, read end (Start only, without Init)
	outs    []*outPipe // output pipes toolbox reads (Start only)
	reaper  bool       // the child is the sandbox helper (landlock, None)
	limits  *limitPlan
}

func (p *prepared) closeChildEnds() { closeAll(p.closers) }

func (p *prepared) closeAll() {
	p.closeChildEnds()
	for _, f := range []*os.File{p.infoR, p.statusR, p.limitsR, p.limits.blockW} {
		if f != nil {
			f.Close()
		}
	}
	for _, o := range p.outs {
		o.r.Close()
	}
}

// Cmd returns c confined by spec as an unstarted *exec.Cmd, for callers
// that must start the process themselves (hashicorp/go-plugin). The
// returned function closes the parent's copies of descriptors passed to
// the child: call it once the command has started (or will not be).
// Variables appended to the Cmd's Env reach the tool under every
// mechanism (go-plugin appends its handshake there); do not change Path,
// Args, Dir, ExtraFiles or SysProcAttr. go-plugin replaces Stdin with
// os.Stdin: a sandboxed tool has no capability left to type into a
// terminal, but prefer go-plugin's RunnerFunc around Start, which keeps
// every guarantee of Start.
//
// Differences from Start: bwrap's Signal refinement and the sandbox
// helper's start confirmation (landlock, None) are not available (a setup
// failure shows as exit code 125 with the reason on stderr), output is the
// caller's to copy (see CopyOutput), and Pdeathsig and
// --die-with-parent follow the OS thread that calls Start: start it from a
// goroutine that holds runtime.LockOSThread until Wait returns, after
// calling PrepareForkThread on it (it gives an unsandboxed child its
// TIOCSTI filter and a bwrap plugin its abstract-socket scope).
// A nil spec means None. Errors: *RefusalError when a declaration cannot
// be honoured, ErrStartFailed when the executable is missing or not
// executable (sandboxed tools are checked before the start).
func Cmd(spec *Spec, c Command) (*exec.Cmd, func(), error) {
	p, err := prepare(spec, c, false)
	if err != nil {
		return nil, nil, err
	}
	lp := p.limits
	if lp.blockW != nil {
		// The sandbox waits for its limits before it starts the tool.
		infoR, blockW := p.infoR, lp.blockW
		p.infoR, lp.blockW = nil, nil
		go func() { _, _ = releaseBwrap(infoR, blockW, 0, p.spec.RunAs, lp.rlimits) }()
	}
	var once sync.Once
	return p.cmd, func() {
		once.Do(func() {
			p.closeAll()
			if lp.cg != nil {
				pid := 0
				if p.cmd.Process != nil {
					pid = p.cmd.Process.Pid
				}
				lp.cg.removeAfter(pid)
			}
		})
	}, nil
}

// planner decides the limits of one start (planLimits; tests inject
// their own cgroup through it).
type planner func(s *Spec, m Mechanism) (*limitPlan, error)

func prepare(spec *Spec, c Command, forStart bool) (*prepared, error) {
	return prepareWith(spec, c, forStart, planLimits)
}

func prepareWith(spec *Spec, c Command, forStart bool, plan planner) (_ *prepared, err error) {
	defer func() { err = spec.AsDeclared(err) }()
	s, m := orNone(spec)
	cred, err := credential(s.RunAs, m)
	if err != nil {
		return nil, err
	}
	switch m {
	case None, Bwrap, Landlock:
	case Auto:
		return nil, fmt.Errorf("sandbox mechanism %q must be resolved first (see Resolve)", m)
	default:
		return nil, fmt.Errorf("unknown sandbox mechanism %q", m)
	}
	if err := checkReachable(s, c, m); err != nil {
		return nil, err
	}
	lp, err := plan(s, m)
	if err != nil {
		return nil, err
	}
	p := &prepared{mech: m, spec: s, limits: lp}
	fail := func(err error) (*prepared, error) {
		p.closeAll()
		if lp.cg != nil {
			lp.cg.remove()
		}
		return nil, err
	}
	switch m {
	case None:
		if !initDone.Load() && len(lp.rlimits) > 0 {
			// No sandbox helper in this process (it never called Init):
			// the limits wrapper alone applies the limits.
			p.cmd, p.limitsR, p.closers, err = noneCmd(c, lp.rlimits, lp.cg, forStart)
			if err != nil {
				return fail(err)
			}
			p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
			break
		}
		p.cmd, p.statusR, p.closers, err = reaperCmd(s, c, cred, forStart, lp)
		if err != nil {
			return fail(err)
		}
	case Bwrap:
		p.cmd, p.infoR, p.closers, err = bwrapCmd(s, c, forStart, lp)
		if err != nil {
			return fail(err)
		}
		// bwrap itself runs as the run_as user: --uid would not change
		// who owns the files the tool creates on the host.
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
		if lp.cg != nil {
			p.cmd.SysProcAttr.UseCgroupFD, p.cmd.SysProcAttr.CgroupFD = true, int(lp.cg.fd.Fd())
		}
	case Landlock:
		p.cmd, p.statusR, p.closers, err = landlockCmd(s, c, forStart, lp)
		if err != nil {
			return fail(err)
		}
		p.cmd.SysProcAttr = helperSysProcAttr() // the helper switches user for the tool
	}
	p.reaper = m == Landlock || m == None && initDone.Load()
	if err := p.stdio(c, forStart); err != nil {
		return fail(err)
	}
	p.cmd.WaitDelay = waitDelay
	return p, nil
}

// stdio gives the child an empty pipe for a nil (or terminal) Stdin and
// never a terminal; for Start, output that is not a plain file goes
// through pipes toolbox reads (see outPipe).
func (p *prepared) stdio(c Command, forStart bool) error {
	in := c.Stdin
	if f, ok := in.(*os.File); ok && isTerminal(f) {
		in = nil
	}
	switch in := in.(type) {
	case nil:
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("creating stdin pipe: %w", err)
		}
		w.Close()
		p.closers = append(p.closers, r)
		p.cmd.Stdin = r
	default:
		p.cmd.Stdin = in
	}
	if !forStart {
		p.cmd.Stdout = noTerminal(c.Stdout)
		p.cmd.Stderr = noTerminal(c.Stderr)
		return nil
	}
	for _, s := range []struct {
		dst io.Writer
		set *io.Writer
	}{{c.Stdout, &p.cmd.Stdout}, {c.Stderr, &p.cmd.Stderr}} {
		if f, ok := s.dst.(*os.File); s.dst == nil || ok && !isTerminal(f) {
			*s.set = s.dst
			continue
		}
		o, w, err := newOutPipe(s.dst)
		if err != nil {
			return fmt.Errorf("creating output pipe: %w", err)
		}
		p.closers = append(p.closers, w)
		p.outs = append(p.outs, o)
		*s.set = w
	}
	return nil
}

func noTerminal(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return struct{ io.Writer }{f}
	}
	return w
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Start starts c under spec (nil = None). Every child gets its own session
// and process group; descriptors above 2 are never inherited; stdin is a
// pipe. The start happens on a goroutine that holds its OS thread until
// the child is reaped, because Pdeathsig and bwrap's --die-with-parent
// follow the thread that forked, and so do what PrepareForkThread gives
// that thread (then the thread is never reused). Errors: *RefusalError when a declaration
// cannot be honoured, ErrStartFailed (wrapping the cause, e.g.
// fs.ErrNotExist) when the child could not be started.
func Start(spec *Spec, c Command) (*Process, error) {
	return startWith(spec, c, planLimits)
}

func startWith(spec *Spec, c Command, plan planner) (*Process, error) {
	pr, err := prepareWith(spec, c, true, plan)
	if err != nil {
		return nil, err
	}
	p := &Process{
		cmd: pr.cmd, mech: pr.mech, done: make(chan struct{}), info: make(chan struct{}),
		reaper: pr.reaper, outs: pr.outs,
	}
	started := make(chan error, 1)
	go p.run(pr, started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStartFailed, namedAs(err, c.Path))
	}
	if pr.statusR != nil {
		if err := readHelperStatus(pr.statusR); err != nil {
			_ = p.Signal(syscall.SIGKILL)
			_, _ = p.Wait()
			return nil, err
		}
	}
	if pr.limitsR != nil {
		if err := readLimitsStatus(pr.limitsR); err != nil {
			_, _ = p.Wait() // the wrapper exits once it has reported
			return nil, err
		}
	}
	if pr.limits.blockW != nil {
		pid, err := releaseBwrap(pr.infoR, pr.limits.blockW, p.Pid(), pr.spec.RunAs, pr.limits.rlimits)
		p.innerPid = pid
		close(p.info)
		if err != nil {
			_ = p.Signal(syscall.SIGKILL)
			_, _ = p.Wait()
			return nil, err
		}
	} else if pr.infoR != nil {
		go func() {
			p.innerPid = readBwrapInfo(pr.infoR)
			close(p.info)
		}()
	} else {
		close(p.info)
	}
	return p, nil
}

func (p *Process) run(pr *prepared, started chan<- error) {
	runtime.LockOSThread()
	confined, err := PrepareForkThread(pr.spec)
	if !confined {
		defer runtime.UnlockOSThread()
	} // else the thread ends with this goroutine, never serving another
	if err == nil {
		err = pr.cmd.Start()
	}
	pr.closeChildEnds()
	if err != nil {
		pr.closeAll()
		if pr.limits.cg != nil {
			pr.limits.cg.remove()
		}
		started <- err
		return
	}
	pid := pr.cmd.Process.Pid
	// Nobody reaps the child but this goroutine: its /proc entry is there.
	p.startTime, _ = helper.StartTimeOf(pid)
	for _, o := range p.outs {
		go o.copy()
	}
	started <- nil
	// Wait for the exit without reaping: while the child is a zombie its
	// pid and group id cannot be reused, so the group kill below (and any
	// Signal until then) reaches only its own leftovers.
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	p.mu.Lock()
	p.exited = true
	// Leftover members of the group (a grandchild holding stdout) die with
	// the child: the call ends when the tool exits.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	p.mu.Unlock()
	for _, o := range p.outs {
		o.exited()
	}
	p.err = pr.cmd.Wait()
	for _, o := range p.outs {
		<-o.done
		p.cut = p.cut || o.cut.Load()
	}
	if pr.limits.cg != nil {
		// What is left in the call's cgroup dies with the call.
		pr.limits.cg.remove()
	}
	close(p.done)
}

// Pid is the process id of the child (the group id too). Under bwrap it is
// bwrap's, under landlock the helper's; the tool is below it.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the child's whole process group. Under bwrap,
// signals other than SIGKILL go to the sandbox's own session (the tool and
// its group; bwrap would otherwise tear the sandbox down at once), and
// SIGKILL kills bwrap, which takes the whole sandbox down. Under landlock,
// SIGKILL first kills every descendant of the helper, setsid grandchildren
// included (likewise under None, whose child is the same helper without
// restrictions). After the child has exited Signal returns
// os.ErrProcessDone.
func (p *Process) Signal(sig syscall.Signal) error {
	inner := 0
	if p.mech == Bwrap && sig != syscall.SIGKILL {
		select {
		case <-p.info:
			inner = p.innerPid
		case <-time.After(time.Second):
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return os.ErrProcessDone
	}
	pid := p.cmd.Process.Pid
	switch {
	case inner > 0:
		// The sandbox's pid 1 leads the tool's session and group; it
		// ignores what it has no handler for, the tool does not.
		if st, ok := helper.ReadStat(inner); ok && st.PPID == pid {
			return syscall.Kill(-inner, sig)
		}
	case p.reaper && sig == syscall.SIGKILL:
		killTree(pid)
	}
	return syscall.Kill(-pid, sig)
}

// Done is closed when the child has exited and its output is collected.
func (p *Process) Done() <-chan struct{} { return p.done }

// OutputCut reports, once Done is closed, that a process outside the
// child's tree (one the tool handed its stdout or stderr to) still held an
// output pipe open half a second after the child exited: everything
// written before the exit was delivered, what was written after that may
// be missing. Descendants of the child do not cause it: they are killed
// when it exits (under None without Init, only its process group is).
func (p *Process) OutputCut() bool {
	<-p.done
	return p.cut
}

// StartTime is the child's start time as /proc/PID/stat reports it (clock
// ticks after boot; 0 when it could not be read): with Pid it tells the
// child apart from a later process given the same pid (see KillTree).
func (p *Process) StartTime() uint64 { return p.startTime }

// Wait waits for the child and returns its exit code, or 128+N when it was
// killed by signal N (under landlock and None the helper reports the
// tool's signal the same way). The error is nil for any exit code; it is non-nil (with
// code -1) only when waiting itself failed.
func (p *Process) Wait() (int, error) {
	<-p.done
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) && !errors.Is(p.err, exec.ErrWaitDelay) {
		return -1, p.err
	}
	st := p.cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}
