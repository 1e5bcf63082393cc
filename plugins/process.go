package plugins

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin/runner"
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// procRunner is the runner.Runner that go-plugin drives through
// ClientConfig.RunnerFunc. It exists because go-plugin's own runner kills
// only the direct child and hands the plugin the caller's stdin; this one
// owns the child's process group, gives it no stdin, and watches stdout so
// that a failed handshake can be explained precisely (see handshakeWatch).
//
// The child's stdout and stderr are os.Pipes read here; go-plugin reads
// forwarded copies (outFwd, errFwd). Once the child exits, the reaper kills
// its whole process group, so a grandchild holding a pipe open can neither
// outlive the plugin nor keep go-plugin waiting for EOF.
type procRunner struct {
	path string
	cmd  *exec.Cmd
	// release closes the parent's copies of descriptors passed to the
	// child (sandbox.Cmd); called once the child started or will not.
	// Idempotent.
	release func()
	// prepThread, when set, confines the locked thread that forks the
	// child (sandbox.PrepareForkThread); true means the thread must not
	// be unlocked.
	prepThread func() (bool, error)

	outFwd, errFwd   *io.PipeReader
	outFwdW, errFwdW *io.PipeWriter

	hs     handshakeWatch
	stderr *tail
	// stderrEOF is closed once the child's stderr is read to its end.
	stderrEOF chan struct{}
	// extraStderr receives a copy of the child's stderr (Options.Stderr).
	extraStderr io.Writer

	abort <-chan struct{}
	pid   atomic.Int64
	// mu orders Kill against the exit: exited is set, under mu, while the
	// exited leader is still a zombie holding the group id.
	mu      sync.Mutex
	exited  bool
	done    chan struct{}
	waitErr error
	state   *os.ProcessState
}

var _ runner.Runner = (*procRunner)(nil)

// handshakeGrace is how long a child that printed something other than a
// handshake line gets to print one after all, so that "printed to stdout
// before the handshake" can be told apart from "not a plugin".
const handshakeGrace = time.Second

// newProcRunner prepares to run cmd. Closing abort kills the child (and
// refuses to start it if it has not started yet).
func newProcRunner(path string, cmd *exec.Cmd, release func(), stderr io.Writer, abort <-chan struct{}) *procRunner {
	r := &procRunner{
		path:        path,
		cmd:         cmd,
		release:     sync.OnceFunc(release),
		stderr:      newTail(stderrTailSize),
		extraStderr: lockedWriter(stderr),
		abort:       abort,
		stderrEOF:   make(chan struct{}),
		done:        make(chan struct{}),
	}
	r.outFwd, r.outFwdW = io.Pipe()
	r.errFwd, r.errFwdW = io.Pipe()
	r.hs.fwd = r.outFwdW
	return r
}

// Start starts the child in its own session and process group. The child
// is started from a goroutine locked to its OS thread until Wait returns,
// because a parent-death signal set by the sandbox follows the thread that
// forked (NOTES.md).
func (r *procRunner) Start(context.Context) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		r.unstarted()
		return fmt.Errorf("creating stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		r.unstarted()
		return fmt.Errorf("creating stderr pipe: %w", err)
	}
	r.cmd.Stdout = outW
	r.cmd.Stderr = errW
	// sandbox.Cmd always makes the child a session leader; Close and Kill
	// rely on it, so make sure.
	if r.cmd.SysProcAttr == nil {
		r.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	r.cmd.SysProcAttr.Setsid = true

	started := make(chan error, 1)
	select {
	case <-r.abort:
		started <- context.Canceled
	default:
		go r.run(started)
	}
	err = <-started
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		r.unstarted()
		return fmt.Errorf("starting plugin %q: %w", r.path, err)
	}
	go r.readStdout(outR)
	go r.readStderr(errR)
	go func() {
		select {
		case <-r.abort:
			_ = r.Kill(context.Background())
		case <-r.done:
		}
	}()
	return nil
}

// unstarted ends a runner whose child never started.
func (r *procRunner) unstarted() {
	r.outFwdW.Close()
	r.errFwdW.Close()
	close(r.stderrEOF)
	r.release()
	close(r.done)
}

// run starts the child, reports the start on started, then reaps it.
func (r *procRunner) run(started chan<- error) {
	runtime.LockOSThread()
	var confined bool
	var err error
	if r.prepThread != nil {
		confined, err = r.prepThread()
	}
	if !confined {
		defer runtime.UnlockOSThread()
	} // else the thread ends with this goroutine, never serving another
	if err == nil {
		err = r.cmd.Start()
	}
	r.release()
	if err != nil {
		started <- err
		return
	}
	pid := r.cmd.Process.Pid
	r.pid.Store(int64(pid))
	started <- nil
	// Wait for the exit without reaping: while the leader is a zombie its
	// pid, the group id, cannot be reused, so the group can still be
	// signalled safely. Members left behind die with the plugin.
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	r.mu.Lock()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	r.exited = true
	r.mu.Unlock()
	r.waitErr = r.cmd.Wait()
	r.state = r.cmd.ProcessState
	close(r.done)
}

func (r *procRunner) readStdout(f *os.File) {
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			r.hs.observe(chunk, err == nil)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			break
		}
	}
	r.hs.eof()
}

// readStderr copies the child's stderr into the tail and Options.Stderr
// with sandbox's rule for output: every byte written before the child
// exited, so that a crash's last words are never lost to a slow reader;
// once it has exited, a holder of the pipe outside its group can delay
// the end of the copy by sandbox's drain grace at most.
func (r *procRunner) readStderr(f *os.File) {
	defer close(r.stderrEOF)
	defer r.errFwdW.Close()
	sandbox.CopyOutput(f, writerFunc(func(p []byte) {
		r.stderr.Write(p)
		if r.extraStderr != nil {
			_, _ = r.extraStderr.Write(p)
		}
	}), r.done)
}

// writerFunc adapts a function that never fails to an io.Writer.
type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) {
	f(p)
	return len(p), nil
}

// Wait waits for the child to exit.
func (r *procRunner) Wait(context.Context) error {
	<-r.done
	return r.waitErr
}

// Kill sends SIGKILL to the child's whole process group. It does nothing
// once the child has exited, so that a late call (CleanupClients at exit)
// can never signal a group whose id was reused.
func (r *procRunner) Kill(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid := int(r.pid.Load())
	if r.exited || pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing plugin process group %d: %w", pid, err)
	}
	return nil
}

// stillRunning is what exitDescription says of a live child.
const stillRunning = "still running"

// exitDescription says how the child ended, for error messages: "exit
// status 3", "killed by signal: killed". It waits up to d for the exit.
func (r *procRunner) exitDescription(d time.Duration) string {
	select {
	case <-r.done:
	default:
		if d <= 0 {
			return stillRunning
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.done:
		case <-t.C:
			return stillRunning
		}
	}
	if r.state == nil {
		return "did not start"
	}
	if ws, ok := r.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal: " + ws.Signal().String()
	}
	return "exit status " + strconv.Itoa(r.state.ExitCode())
}

// stderrTail returns the end of what the child wrote to stderr. Once the
// child has exited, it first waits for the copy of its stderr to end (see
// readStderr: bounded, even when a process outside the group holds the
// pipe), so that a crash's last words are in.
func (r *procRunner) stderrTail() string {
	select {
	case <-r.done:
		<-r.stderrEOF
	default:
	}
	return r.stderr.String()
}

// Diagnose is empty: Start explains a failed handshake itself.
func (r *procRunner) Diagnose(context.Context) string { return "" }

// Stdout is what go-plugin scans for the handshake line.
func (r *procRunner) Stdout() io.ReadCloser { return r.outFwd }

// Stderr carries nothing and ends when the child's stderr does; the child's
// stderr is kept in a tail for error messages instead of being logged.
func (r *procRunner) Stderr() io.ReadCloser { return r.errFwd }

// Name is the plugin's path.
func (r *procRunner) Name() string { return r.path }

// ID is the child's pid ("0" before Start).
func (r *procRunner) ID() string { return strconv.Itoa(int(r.pid.Load())) }

// PluginToHost: the plugin's socket is reachable at the same path.
func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }

// HostToPlugin: addresses are the same on both sides.
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// lockedWriter serialises writes to w (nil stays nil): the plugin's
// stderr arrives both from its stderr pipe and from go-plugin's stdio stream.
func lockedWriter(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return &locked{w: w}
}

type locked struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *locked) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// tail keeps the last bytes written to it; safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// stderrTailSize bounds the stderr kept for error messages.
const stderrTailSize = 4 << 10

func newTail(max int) *tail { return &tail{max: max} }

// Write keeps the last t.max bytes; it never fails.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept, without surrounding blank space.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
