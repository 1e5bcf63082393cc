package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// DefaultStreamKeep is how many of the last events a stream run returns
// when StreamRequest.Keep is 0.
const DefaultStreamKeep = 100

// StreamRequest is one run of a stream tool (RunStream).
type StreamRequest struct {
	// LockPath, Lock, Name, Backends, Args, CallerEnv and Session are as
	// in launcher.Request.
	LockPath  string
	Lock      *manifest.Lock
	Name      string
	Backends  map[string]string
	Args      map[string]any
	CallerEnv []string
	Session   string
	// StateDir is the caller's state directory, hidden from the tool.
	StateDir string
	// Workspace is as in launcher.Request.
	Workspace runspec.Workspace
	// Timeout bounds the run; 0 means the operator's default for the tool
	// (the lock's runtime.timeout_seconds), else none (ctx bounds it).
	Timeout time.Duration
	// Keep is how many of the last events the result holds (0 means
	// DefaultStreamKeep).
	Keep int
	// OnEvent, when set, receives every event as it arrives, in order, on
	// one goroutine; the tool waits while it runs (its stdout is not read).
	OnEvent func(launcher.Event)
	// Stderr, when set, receives the tool's stderr as it arrives.
	Stderr io.Writer
	// CompileSchema compiles the declared output.event, as
	// Config.CompileSchema (nil refuses a tool that declares one with
	// launcher.ErrNeedsValidator).
	CompileSchema func(schema json.RawMessage) (EventValidator, error)
}

// StreamResult is how a stream run ended: the last Keep events and how
// many came before them.
type StreamResult struct {
	Tool       string `json:"tool"`
	Backend    string `json:"backend,omitempty"`
	Capability string `json:"capability,omitempty"`
	// ExitCode is the tool's (128+N for signal N), launcher.ExitTimeout
	// when the run timed out (Timeout or runtime.timeout.idle).
	ExitCode int  `json:"exit_code"`
	TimedOut bool `json:"timed_out,omitempty"`
	Canceled bool `json:"canceled,omitempty"`
	// Reason says why a timed-out run was stopped.
	Reason string `json:"reason,omitempty"`
	// Events are the last events, in order; Count is every event the tool
	// emitted and Elided = Count - len(Events).
	Events     []launcher.Event `json:"events"`
	Count      int              `json:"count"`
	Elided     int              `json:"elided"`
	StderrTail string           `json:"stderr_tail,omitempty"`
	// OutputCut is launcher.Result.OutputCut: output written after the
	// tool exited, by a process outside its tree, may be missing.
	OutputCut bool          `json:"output_cut,omitempty"`
	Elapsed   time.Duration `json:"elapsed_ns"`
}

// RunStream runs a stream tool to its end (DESIGN.md §5: "events reach the
// caller as they arrive; the result is the last N events plus the count
// elided"), for `toolbox run` of a stream tool. It resolves, verifies and
// prepares the tool as Start does (same errors before launch; a tool that
// is not a stream tool wraps ErrNotStartable). Events are framed as the
// tool declares; jsonl lines that break the schema are invalid events,
// never dropped. A run stops (declared cancel signal, then SIGKILL after
// runtime.timeout.stop) when Timeout passes, when runtime.timeout.idle
// passes without output, or when ctx ends. A tool that ran returns a
// result and a nil error whatever its exit code.
func RunStream(ctx context.Context, req StreamRequest) (*StreamResult, error) {
	var cfg Config
	cfg.defaults() // the default start and stop timings
	plan, err := planTool(planInput{
		lock: req.Lock, lockPath: req.LockPath, name: req.Name, backends: req.Backends,
		values: req.Args, callerEnv: req.CallerEnv, session: req.Session,
		compile: req.CompileSchema, timing: cfg.Timing, hidden: []string{req.StateDir},
		workspace: req.Workspace,
	})
	if err != nil {
		return nil, err
	}
	if plan.mode != protocol.ProcessStream {
		return nil, fmt.Errorf("tool %q is a %s tool, not a stream (start a service with `toolbox start`; run a oneshot with `toolbox run`): %w", plan.tool, plan.mode, ErrNotStartable)
	}
	keep := req.Keep
	if keep <= 0 {
		keep = DefaultStreamKeep
	}
	res := &StreamResult{Tool: plan.tool, Backend: plan.backend, Capability: plan.capability}
	last := newLastEvents(keep)
	emit := func(e launcher.Event) {
		last.add(e)
		if req.OnEvent != nil {
			req.OnEvent(e)
		}
	}
	var lastOut atomic.Int64
	fr := newFramer(plan.framing, plan.outValidator, nil, nil, emit)
	errs := NewRing(MaxPageBytes)
	cmd, release, err := plan.command()
	if err != nil {
		return nil, err
	}
	defer release()
	// The secrets of the tool's bindings are replaced before the framer,
	// the stderr ring and req.Stderr see its output.
	out := plan.redactor.Writer(writerFunc(func(b []byte) {
		lastOut.Store(time.Now().UnixNano())
		_, _ = fr.Write(b)
	}))
	errw := plan.redactor.Writer(writerFunc(func(b []byte) {
		lastOut.Store(time.Now().UnixNano())
		_, _ = errs.Write(Stderr, b)
		if req.Stderr != nil {
			_, _ = req.Stderr.Write(b) // diagnostics are best effort
		}
	}))
	cmd.Stdout, cmd.Stderr = out, errw
	if plan.stdin != nil {
		cmd.Stdin = bytes.NewReader(plan.stdin)
	}
	timeout := req.Timeout
	if t := req.Lock.Tools[plan.tool]; timeout <= 0 && t.Runtime.TimeoutSeconds > 0 {
		timeout = seconds(t.Runtime.TimeoutSeconds)
	}
	start := time.Now()
	lastOut.Store(start.UnixNano())
	sp, err := sandbox.Start(plan.spec, cmd)
	if err != nil {
		return nil, startError(cmd.Path, err)
	}
	code := superviseStream(ctx, sp, &plan.launchPlan, timeout, &lastOut, res)
	_, _ = out.Flush(), errw.Flush()
	fr.finish()
	errs.Flush()
	res.ExitCode = code
	if res.TimedOut {
		res.ExitCode = launcher.ExitTimeout
	}
	res.Events, res.Count = last.list()
	res.Elided = res.Count - len(res.Events)
	res.StderrTail = errs.Tail(launcher.StderrTailBytes).Text()
	res.OutputCut = sp.OutputCut()
	res.Elapsed = time.Since(start)
	return res, nil
}

// superviseStream waits for the run, stopping it on a timeout or when ctx
// ends, and returns its exit code.
func superviseStream(ctx context.Context, sp *sandbox.Process, pl *launchPlan, timeout time.Duration, lastOut *atomic.Int64, res *StreamResult) int {
	var deadlineC, idleC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadlineC = t.C
	}
	var idle *time.Timer
	if pl.idle > 0 {
		idle = time.NewTimer(pl.idle)
		defer idle.Stop()
		idleC = idle.C
	}
wait:
	for {
		select {
		case <-sp.Done():
			return waitCode(sp)
		case <-deadlineC:
			res.TimedOut, res.Reason = true, fmt.Sprintf("its timeout of %s passed", timeout)
			break wait
		case <-idleC:
			if quiet := time.Since(time.Unix(0, lastOut.Load())); quiet < pl.idle {
				idle.Reset(pl.idle - quiet)
				continue
			}
			res.TimedOut, res.Reason = true, fmt.Sprintf("no output for %s (runtime.timeout.idle)", pl.idle)
			break wait
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				res.TimedOut, res.Reason = true, "the caller's deadline passed"
			} else {
				res.Canceled = true
			}
			break wait
		}
	}
	sig := pl.cancelSig // stdin is closed: a {"send"} cancel becomes SIGTERM
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	_ = sp.Signal(sig)
	grace := time.NewTimer(pl.stopGrace)
	defer grace.Stop()
	select {
	case <-sp.Done():
	case <-grace.C:
		_ = sp.Signal(syscall.SIGKILL)
	}
	return waitCode(sp)
}

func waitCode(sp *sandbox.Process) int {
	code, err := sp.Wait()
	if err != nil {
		return -1
	}
	return code
}

// writerFunc adapts a function that never fails to an io.Writer.
type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) {
	f(b)
	return len(b), nil
}

// lastEvents keeps the last n events and counts them all.
type lastEvents struct {
	buf   []launcher.Event
	n     int // capacity
	next  int // oldest, once full
	count int
}

func newLastEvents(n int) *lastEvents { return &lastEvents{n: n} }

func (l *lastEvents) add(e launcher.Event) {
	l.count++
	if len(l.buf) < l.n {
		l.buf = append(l.buf, e)
		return
	}
	l.buf[l.next] = e
	l.next = (l.next + 1) % l.n
}

func (l *lastEvents) list() ([]launcher.Event, int) {
	out := make([]launcher.Event, 0, len(l.buf))
	out = append(out, l.buf[l.next:]...)
	out = append(out, l.buf[:l.next]...)
	return out, l.count
}
