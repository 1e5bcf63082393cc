package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// DefaultTimeout is the call timeout when neither the request nor the
// operator (the lock's runtime.timeout_seconds) sets one.
const DefaultTimeout = 120 * time.Second

// DefaultStopGrace is the time between the cancel signal and SIGKILL when
// the tool does not declare runtime.timeout.stop.
const DefaultStopGrace = 5 * time.Second

// stopPlan is how a running tool is stopped: the signal to its process
// group, then SIGKILL after grace.
type stopPlan struct {
	signal syscall.Signal
	grace  time.Duration
}

// outcome is how a supervised process ended.
type outcome struct {
	started  bool // false when Start failed
	code     int
	timedOut bool // the call timeout or the context deadline expired
	canceled bool // the context was canceled
	reason   string
	cut      bool // sandbox.Process.OutputCut
	elapsed  time.Duration
}

// supervise starts c under spec and waits for it, stopping it when timeout
// expires, when it writes nothing for idle (> 0; last is when it last
// wrote) or when ctx ends. Start errors are mapped to ErrNotFound and
// ErrNotExecutable where they apply.
func supervise(ctx context.Context, spec *sandbox.Spec, c sandbox.Command, timeout time.Duration, stop stopPlan, idle time.Duration, last *lastOutput) (outcome, error) {
	start := time.Now()
	p, err := sandbox.Start(spec, c)
	if err != nil {
		return outcome{}, startError(c.Path, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var idleC <-chan time.Time
	var idleT *time.Timer
	if idle > 0 {
		idleT = time.NewTimer(idle)
		defer idleT.Stop()
		idleC = idleT.C
	}
	out := outcome{started: true}
wait:
	for {
		select {
		case <-p.Done():
		case <-timer.C:
			out.timedOut = true
			stopProcess(p, stop)
		case <-idleC:
			// Not reset at every write (a flood would pay for it): the time
			// of the last output is checked when it fires.
			if q := last.quiet(); q < idle {
				idleT.Reset(idle - q)
				continue
			}
			out.timedOut, out.reason = true, idleReason(idle)
			stopProcess(p, stop)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				out.timedOut = true
			} else {
				out.canceled = true
			}
			stopProcess(p, stop)
		}
		break wait
	}
	code, err := p.Wait()
	out.elapsed = time.Since(start)
	out.code = code
	out.cut = p.OutputCut()
	if out.timedOut {
		out.code = ExitTimeout
	}
	if err != nil {
		return out, fmt.Errorf("waiting for %q: %w", c.Path, err)
	}
	return out, nil
}

// stopProcess sends the cancel signal to the process group, then SIGKILL
// when the tool is still there after the grace. It returns once the tool
// has exited. Errors from kill are ignored: the only one possible here is
// ESRCH, a group that is already gone.
func stopProcess(p *sandbox.Process, stop stopPlan) {
	_ = p.Signal(stop.signal)
	grace := time.NewTimer(stop.grace)
	defer grace.Stop()
	select {
	case <-p.Done():
	case <-grace.C:
		_ = p.Signal(syscall.SIGKILL)
		<-p.Done()
	}
}

// startError classifies a failure to start the tool.
func startError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("starting %q: %w: %w", path, ErrNotFound, err)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("starting %q: %w: %w", path, ErrNotExecutable, err)
	}
	return fmt.Errorf("starting %q: %w", path, err)
}

// execOptions are the per-call settings of execute, taken from the lock and
// the request.
type execOptions struct {
	framing     string
	validator   EventValidator
	timeout     time.Duration
	stop        stopPlan
	stdout      io.Writer
	stderr      io.Writer
	emptyResult *protocol.EmptyResult
	mediaType   string
	keepEvents  int
	// redactor replaces the call's secret bound values in stdout and
	// stderr as they arrive, before anything (the Result, the forwarded
	// streams) sees them; nil when there are none.
	redactor   *Redactor
	idle       time.Duration // > 0: stop a run silent that long (idle.go)
	limit      int           // the output budget; 0 means MaxResultBytes
	streamOnly bool          // keep nothing of what stdout streamed
}

// execute runs c with the sinks of o attached and builds the Result (all
// but the names). The Result is nil only when the tool never started.
func execute(ctx context.Context, spec *sandbox.Spec, c sandbox.Command, o execOptions) (*Result, error) {
	return collect(c.Path, o, func(stdout, stderr io.Writer) (outcome, error) {
		c.Stdout, c.Stderr = stdout, stderr
		if o.idle > 0 {
			last := newLastOutput()
			c.Stdout, c.Stderr = last.stamp(stdout), last.stamp(stderr)
			return supervise(ctx, spec, c, o.timeout, o.stop, o.idle, last)
		}
		return supervise(ctx, spec, c, o.timeout, o.stop, 0, nil)
	})
}

// collect attaches the output sinks of o to one run and builds its Result
// (all but the names); exec and plugin tools share it. The Result is nil
// only when the tool never started.
func collect(path string, o execOptions, run func(stdout, stderr io.Writer) (outcome, error)) (*Result, error) {
	out := newStdoutSink(o.framing, o.stdout, o.validator)
	out.keepEvents, out.streamOnly = o.keepEvents, o.streamOnly
	if o.limit > 0 {
		out.limit = o.limit
	}
	errs := &tailSink{forward: o.stderr}
	redOut, redErr := o.redactor.Writer(out), o.redactor.Writer(errs)
	ended, err := run(redOut, redErr)
	// The run is over (its output copiers are done): write what was held
	// back in case it began a secret.
	_, _ = redOut.Flush(), redErr.Flush()
	if !ended.started {
		// What it wrote before failing its start (a plugin's) is dropped,
		// and its validation workers ended.
		out.stopWorkers()
		return nil, err
	}
	out.finish()
	res := &Result{
		ExitCode:     ended.code,
		TimedOut:     ended.timedOut,
		Canceled:     ended.canceled,
		Framing:      o.framing,
		Output:       out.raw,
		StdoutBytes:  out.n,
		Truncated:    out.truncated,
		Binary:       !out.utf8.valid(),
		MediaType:    o.mediaType,
		Events:       out.events,
		Elided:       out.elided,
		Lines:        out.lines,
		Invalid:      out.invalid,
		InvalidCount: out.invalidCount,
		OutputCut:    ended.cut,
		StderrTail:   errs.tail(),
		Reason:       ended.reason,
		Elapsed:      ended.elapsed,
	}
	if res.Binary && res.MediaType == "" {
		res.MediaType = "application/octet-stream"
	}
	ranClean := res.ExitCode == 0 && !res.TimedOut && !res.Canceled
	if out.n == 0 && ranClean && o.emptyResult != nil && o.emptyResult.Tag == "AddMessage" {
		res.Message = o.emptyResult.Contents
	}
	if err == nil && out.fwdErr != nil {
		err = fmt.Errorf("writing the output of %q: %w", path, out.fwdErr)
	}
	return res, err
}
