package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// proc is one process the supervisor owns, across its restarts.
type proc struct {
	s                    *Supervisor
	id, session          string
	kind                 Kind
	tool, capability     string
	name, label, command string
	plan                 *launchPlan // nil for a record loaded from a dead supervisor
	ring                 *Ring       // nil likewise
	logs                 *logPair    // nil without log files
	logPaths             *LogFiles
	dig                  *digester  // services only
	evs                  *eventTail // streams only (stream_events.go)
	mail                 *mailbox
	slot                 int // its host slot (slots.go); -1 for none. Guarded by s.mu.
	runtime              *Runtime

	readyCh chan error    // the first start's outcome (buffered)
	done    chan struct{} // closed once the state is final
	stopCh  chan struct{} // closed at the first stop request
	killCh  chan struct{} // closed at the first forced stop

	persistMu sync.Mutex
	dropped   bool // forgotten: never write its record again
	retrying  bool // a retry of the record's write is scheduled
	// outFlush is set while a write of the record for new output is
	// scheduled (flushOutput).
	outFlush atomic.Bool
	// recorded is the output count of a record loaded from a dead
	// supervisor (its ring is nil).
	recorded *RecordedOutput

	lmu       sync.Mutex
	listeners map[*listener]struct{}
	nlisten   atomic.Int32
	// sendTurn is held (one token) by the send whose answer window is
	// open: sends to one process take turns (send.go).
	sendTurn chan struct{}

	mu        sync.Mutex
	state     State
	since     time.Time
	started   time.Time
	ended     time.Time
	exitCode  *int
	reason    string
	restarts  int
	pid       int
	pidStart  uint64 // pid's start time (sandbox.Process.StartTime)
	inst      *instance
	stopReq   bool
	forced    bool
	outputCut bool // a run's output was cut (sandbox.Process.OutputCut)
	readySent bool
	everReady bool
	inline    int      // inline waiters registered (inline.go)
	held      bool     // finish held the completion mail back for them
	delivered bool     // one of them returned the final state
	notes     []string // Status.Notes
	recordErr error    // why the latest record could not be written; nil once it was
}

// instance is one run of a proc (a restart makes a new one).
type instance struct {
	sp        *sandbox.Process
	started   time.Time
	lastOut   atomic.Int64 // unix nanoseconds of the latest output
	ready     chan struct{}
	readyOnce sync.Once
	fr        *framer // nil: no events and no ready line
	// redOut and redErr redact the run's stdout and stderr before anything
	// else sees them; flushed once the run is reaped.
	redOut, redErr *launcher.RedactWriter

	waitOnce sync.Once
	code     int

	longLine atomic.Bool // a startup line was too long to judge as the ready line

	stdinMu  sync.Mutex
	stdin    *os.File // write end; nil when closed or never kept
	stdinErr error    // why stdin can no longer be written

	out *ownedStdout // a service that reads events: its stdout pipe (stdout_pipe.go)
}

func (in *instance) markReady() { in.readyOnce.Do(func() { close(in.ready) }) }

// listener receives the events a Send waits for: those of run in that
// end past stdout position after.
type listener struct {
	ch      chan launcher.Event
	dropped atomic.Int64
	in      *instance
	after   int64
}

func newProc(s *Supervisor, id, sessionID string, r reservation) *proc {
	now := time.Now()
	p := &proc{
		s: s, id: id, session: sessionID, kind: r.kind,
		tool: r.tool, capability: r.capability,
		name: r.name, label: r.label, command: r.command,
		plan:      r.plan,
		runtime:   r.plan.runtime,
		ring:      NewRing(s.cfg.RingBytes),
		readyCh:   make(chan error, 1),
		done:      make(chan struct{}),
		stopCh:    make(chan struct{}),
		killCh:    make(chan struct{}),
		listeners: map[*listener]struct{}{},
		sendTurn:  make(chan struct{}, 1),
		slot:      -1,
		state:     StateStarting,
		since:     now,
		started:   now,
	}
	if s.cfg.StateDir != "" && s.cfg.LogBytes > 0 {
		logs, err := openLogs(s.cfg.StateDir, id, s.cfg.LogBytes)
		if err != nil {
			s.logf("process %s: %v", id, err)
			p.note(fmt.Sprintf("its log files could not be opened (%v); its output is only in memory", err))
		} else {
			p.logs, p.logPaths = logs, &logs.paths
			onError := func(path string, err error) {
				p.note(fmt.Sprintf("its log file %s could not be written (%v): it stops there; the output ring in memory has the rest", path, err))
			}
			logs.out.onError, logs.err.onError = onError, onError
		}
	}
	if r.kind == KindStream {
		p.evs = newEventTail(s.cfg.Limits.MailEvents, s.cfg.Limits.MailBytes)
	}
	if r.kind == KindService {
		lim, pl := s.cfg.Limits, r.plan
		p.dig = &digester{
			per: pl.digest.Per, n: pl.digest.N,
			gap: s.cfg.Timing.RoundGap, most: s.cfg.Timing.RoundMax,
			maxEvents: lim.MailEvents, maxBytes: lim.MailBytes,
			deliver: p.mailEvents,
		}
		if p.dig.n <= 0 && p.dig.per != digestRound {
			p.dig.per = digestRound
		}
	}
	return p
}

// loadedProc is a finished record of a dead supervisor.
func loadedProc(s *Supervisor, r Record) *proc {
	p := &proc{
		s: s, id: r.ID, session: r.Session, kind: r.Kind,
		tool: r.Tool, capability: r.Capability,
		name: r.Name, label: r.Label, command: r.Command,
		logPaths:  r.Logs,
		runtime:   r.Runtime,
		recorded:  r.Output,
		readyCh:   make(chan error, 1),
		done:      make(chan struct{}),
		stopCh:    make(chan struct{}),
		killCh:    make(chan struct{}),
		listeners: map[*listener]struct{}{},
		sendTurn:  make(chan struct{}, 1),
		slot:      -1,
		state:     r.State, since: r.Since, started: r.Started,
		exitCode: r.ExitCode, reason: r.Reason, restarts: r.Restarts, pid: r.PID, pidStart: r.PIDStart,
		readySent: true,
	}
	if r.Ended != nil {
		p.ended = *r.Ended
	}
	close(p.done)
	return p
}

// launch starts one run of the plan. Its stdin is a pipe of ours when the
// process reads events (kept open) or gets stdin-mode arguments.
func (p *proc) launch() (*instance, error) {
	pl := p.plan
	in := &instance{ready: make(chan struct{}), started: time.Now()}
	in.lastOut.Store(in.started.UnixNano())
	framing := pl.framing
	if p.kind == KindCommand {
		framing = "" // a shell command's output is bytes, not events
	}
	if framing != "" || pl.readyRe != nil {
		in.fr = newFramer(framing, pl.outValidator, pl.readyRe, in.markReady, func(e launcher.Event) { p.onEvent(e, in, in.fr.end) })
		in.fr.want, in.fr.skip = p.wantEvent, p.skipEvent
		in.fr.onLongLine = func() {
			in.longLine.Store(true)
			p.note(longLineNote)
		}
	}
	cmd, release, err := pl.command()
	if err != nil {
		return nil, err
	}
	defer release()
	in.redOut = pl.redactor.Writer(&outWriter{p: p, in: in, stream: Stdout})
	in.redErr = pl.redactor.Writer(&outWriter{p: p, in: in, stream: Stderr})
	var stdout io.Writer = in.redOut
	cmd.Stdout, cmd.Stderr = stdout, in.redErr
	if pl.keepStdin {
		// A send must know where stdout stood when it was written.
		out, err := newOwnedStdout()
		if err != nil {
			return nil, err
		}
		in.out, cmd.Stdout = out, out.w
	}
	var r, w *os.File
	if pl.keepStdin || len(pl.stdin) > 0 {
		var err error
		if r, w, err = os.Pipe(); err != nil {
			if in.out != nil {
				in.out.abandon()
			}
			return nil, fmt.Errorf("creating stdin pipe: %w", err)
		}
		if pl.keepStdin {
			growPipe(w, stdinPipeBytes) // room for one whole event of MaxSendBytes
		}
		cmd.Stdin = r
	}
	sp, err := sandbox.Start(pl.spec, cmd)
	if r != nil {
		r.Close() // the child has its copy
	}
	if err != nil {
		if w != nil {
			w.Close()
		}
		if in.out != nil {
			in.out.abandon()
		}
		return nil, startError(cmd.Path, err)
	}
	in.sp = sp
	if in.out != nil {
		in.out.start(stdout)
	}
	if w != nil {
		if len(pl.stdin) > 0 {
			_ = w.SetWriteDeadline(time.Now().Add(p.s.cfg.Timing.StdinWrite))
			if n, err := w.Write(pl.stdin); err != nil && n > 0 {
				in.stdinErr = errors.New("its stdin-mode arguments were only partly written")
			}
		}
		if pl.keepStdin {
			in.stdin = w
		} else {
			w.Close()
		}
	}
	return in, nil
}

// longLineNote says why a long startup line did not make a process ready.
var longLineNote = fmt.Sprintf("a line before the ready line was longer than %d bytes: a line too long to judge is never taken for the ready line (ready.match)", MaxEventBytes)

// startError classifies a failure to start, as the launcher does.
func startError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("starting %q: %w: %w", path, launcher.ErrNotFound, err)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("starting %q: %w: %w", path, launcher.ErrNotExecutable, err)
	}
	return fmt.Errorf("starting %q: %w", path, err)
}

// outWriter receives one stream of one run (from os/exec's copier).
type outWriter struct {
	p      *proc
	in     *instance
	stream Stream
}

func (w *outWriter) Write(b []byte) (int, error) {
	w.in.lastOut.Store(time.Now().UnixNano())
	if w.p.logs != nil {
		w.p.logs.write(w.stream, b)
	}
	_, _ = w.p.ring.Write(w.stream, b)
	if w.stream == Stdout && w.in.fr != nil {
		_, _ = w.in.fr.Write(b)
	}
	w.p.flushOutput()
	return len(b), nil
}

// outputFlush is how long new output waits before the record says how
// much was written: after a kill -9 of the supervisor, its successor
// tells what was lost, short of at most this much of the latest output.
const outputFlush = time.Second

// flushOutput schedules a write of the record, within outputFlush, that
// counts the output written so far: one write a second at most, whatever
// the rate of the output.
func (p *proc) flushOutput() {
	if p.s.cfg.StateDir == "" || !p.outFlush.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(outputFlush, func() {
		p.outFlush.Store(false)
		if !p.s.isClosed() {
			_ = p.persist()
		}
	})
}

// begin records a launched run: its pid, state starting. The error is
// the record's (persist).
func (p *proc) begin(in *instance) error {
	p.mu.Lock()
	p.inst, p.pid, p.pidStart = in, in.sp.Pid(), in.sp.StartTime()
	if !p.stopReq {
		p.state, p.since = StateStarting, time.Now()
	}
	p.mu.Unlock()
	return p.persist()
}

// launchRecorded launches the first run of a reserved process, so that no
// process ever runs without its record: the record is written before
// anything starts (an error wrapping ErrNoRecord, the reservation
// released), and once more with the pid (when that fails the run is
// killed: the error wraps ErrNoRecord too). Then it is supervised.
func (p *proc) launchRecorded() error {
	if err := p.persist(); err != nil {
		p.s.release(p)
		return fmt.Errorf("%w, so nothing was started: %w", ErrNoRecord, err)
	}
	in, err := p.launch()
	if err != nil {
		p.s.release(p)
		return err
	}
	berr := p.begin(in)
	go p.run(in)
	if berr != nil {
		p.requestStop(true)
		<-p.done
		return fmt.Errorf("%w with its pid, so process %s was killed: %w", ErrNoRecord, p.id, berr)
	}
	return nil
}

// endHow says how a run ended.
type endHow int

const (
	endExit      endHow = iota // it exited by itself
	endReadyExit               // ready kind "exit": it exited 0
	endNotReady                // start timeout: killed
	endStopped                 // stopped by request
	endTimedOut                // idle timeout or command timeout: stopped
)

type ending struct {
	how    endHow
	code   int
	ready  bool // the run had become ready
	reason string
	ranFor time.Duration
}

// run supervises runs until the process is final.
func (p *proc) run(in *instance) {
	for {
		end := p.supervise(in)
		end.ranFor = time.Since(in.started)
		state, reason, restart := p.decide(end)
		if !restart {
			p.finish(state, end.code, reason, end.how == endReadyExit)
			return
		}
		delay, n := p.restarting(end)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-p.stopCh:
			t.Stop()
			p.finish(StateStopped, end.code, "stopped while waiting to restart", false)
			return
		}
		if err := p.plan.verify(); err != nil {
			p.finish(StateFailed, end.code, fmt.Sprintf("not restarted (restart %d): %v", n, err), false)
			return
		}
		next, err := p.launch()
		if err != nil {
			p.finish(StateFailed, end.code, fmt.Sprintf("restart %d failed: %v", n, err), false)
			return
		}
		in = next
		p.begin(in)
	}
}

// supervise waits for one run to become ready, then to end: by itself,
// by a stop, or by a timeout (idle, or a background command's deadline).
func (p *proc) supervise(in *instance) ending {
	pl := p.plan
	if pl.readyKind == readyImmediate {
		p.becameReady()
	} else if end, over := p.awaitReady(in); over {
		return end
	}
	var idleC, deadlineC <-chan time.Time
	var idle *time.Timer
	if pl.idle > 0 {
		idle = time.NewTimer(pl.idle)
		defer idle.Stop()
		idleC = idle.C
	}
	if pl.deadline > 0 {
		t := time.NewTimer(max(pl.deadline-time.Since(in.started), 0))
		defer t.Stop()
		deadlineC = t.C
	}
	for {
		select {
		case <-in.sp.Done():
			return ending{how: endExit, code: p.reap(in), ready: true}
		case <-p.stopCh:
			return ending{how: endStopped, code: p.stopRun(in), ready: true}
		case <-idleC:
			// The timer is not reset on every write (a flood would pay for
			// it): it checks the latest output time when it fires.
			if quiet := time.Since(time.Unix(0, in.lastOut.Load())); quiet < pl.idle {
				idle.Reset(pl.idle - quiet)
				continue
			}
			return p.timeOut(in, fmt.Sprintf("no output for %s (runtime.timeout.idle)", pl.idle))
		case <-deadlineC:
			return p.timeOut(in, fmt.Sprintf("its timeout of %s passed", pl.deadline))
		}
	}
}

// awaitReady waits for the ready line or the exit, bounded by the start
// timeout. over is true when the run ended meanwhile.
func (p *proc) awaitReady(in *instance) (end ending, over bool) {
	pl := p.plan
	t := time.NewTimer(pl.startTimeout)
	defer t.Stop()
	var readyC <-chan struct{}
	if pl.readyKind == readyLine {
		readyC = in.ready
	}
	select {
	case <-readyC:
		p.becameReady()
		return ending{}, false
	case <-in.sp.Done():
		code := p.reap(in)
		select {
		case <-in.ready: // the ready line came just before the exit
			p.becameReady()
			return ending{how: endExit, code: code, ready: true}, true
		default:
		}
		if pl.readyKind == readyExit && code == 0 {
			return ending{how: endReadyExit, code: 0, ready: true}, true
		}
		return ending{how: endExit, code: code, reason: fmt.Sprintf("exited with code %d before it was ready", code)}, true
	case <-t.C:
		_ = in.sp.Signal(syscall.SIGKILL)
		code := p.reap(in)
		why := fmt.Sprintf("not ready within %s (runtime.timeout.start); its process group was killed", pl.startTimeout)
		if in.longLine.Load() {
			why += "; " + longLineNote
		}
		return ending{how: endNotReady, code: code, reason: why}, true
	case <-p.stopCh:
		return ending{how: endStopped, code: p.stopRun(in), reason: "stopped before it was ready"}, true
	}
}

// timeOut stops a run that hit a timeout.
func (p *proc) timeOut(in *instance, why string) ending {
	p.mu.Lock()
	p.state, p.since, p.reason = StateStopping, time.Now(), why
	p.mu.Unlock()
	_ = p.persist() // kept for Status and the callers (recordError)
	return ending{how: endTimedOut, code: p.stopRun(in), ready: true, reason: why}
}

// reap waits for the run's exit and collects it: the last partial line,
// the held-back bytes of the ring, stdin closed. It returns the exit code
// (128+N for signal N, -1 when waiting failed).
func (p *proc) reap(in *instance) int {
	in.waitOnce.Do(func() {
		code, err := in.sp.Wait()
		if err != nil {
			code = -1
		}
		in.code = code
		if in.out != nil && in.out.drain() {
			p.s.logf("process %s: output its leftover descendants wrote after it exited was cut", p.id)
		}
		_, _ = in.redOut.Flush(), in.redErr.Flush() // before the framer and the ring close
		if in.sp.OutputCut() {
			p.mu.Lock()
			p.outputCut = true
			p.mu.Unlock()
		}
		if in.fr != nil {
			in.fr.finish() // os/exec's copiers are done: Wait waited for them
		}
		p.ring.Flush()
		in.closeStdin()
	})
	return in.code
}

func (in *instance) closeStdin() {
	in.stdinMu.Lock()
	defer in.stdinMu.Unlock()
	if in.stdin != nil {
		in.stdin.Close()
		in.stdin = nil
	}
	if in.stdinErr == nil {
		in.stdinErr = ErrNotRunning
	}
}

// becameReady moves a starting run to running and answers the first start.
func (p *proc) becameReady() {
	p.mu.Lock()
	if !p.stopReq && p.state == StateStarting {
		p.state, p.since = StateRunning, time.Now()
	}
	p.everReady = true
	first := !p.readySent
	p.readySent = true
	p.mu.Unlock()
	_ = p.persist() // before the answer: the caller may read the record
	if first {
		p.readyCh <- nil
	}
}

// decide turns how a run ended into the next state, or a restart.
func (p *proc) decide(end ending) (State, string, bool) {
	p.mu.Lock()
	stopReq, everReady := p.stopReq, p.everReady
	if end.ranFor >= p.s.cfg.Timing.RestartReset {
		p.restarts = 0
	}
	restarts := p.restarts
	p.mu.Unlock()
	switch {
	case end.how == endTimedOut:
		return StateTimedOut, end.reason, false
	case stopReq || end.how == endStopped:
		why := "stopped by request"
		if end.reason != "" {
			why = end.reason + " (stopped by request)"
		}
		return StateStopped, why, false
	case end.how == endReadyExit:
		return StateExited, "", false
	case !everReady:
		return StateFailed, end.reason, false // the first start failed
	}
	why := end.reason
	if why == "" {
		why = exitWhy(end.code)
	}
	switch p.plan.onExit {
	case onExitRestart:
		if lim := p.s.cfg.Limits.RestartLimit; restarts >= lim {
			return StateFailed, fmt.Sprintf("%s; restart limit of %d reached", why, lim), false
		}
		return "", why, true
	case onExitFail:
		return StateFailed, why + " (on_exit is fail)", false
	}
	if end.how == endExit && end.code == 0 {
		return StateExited, "", false
	}
	return StateFailed, why, false
}

func exitWhy(code int) string {
	switch {
	case code < 0:
		return "waiting for it failed"
	case code > 128 && code < 128+65:
		return fmt.Sprintf("exit code %d (signal %d)", code, code-128)
	}
	return fmt.Sprintf("exit code %d", code)
}

// restarting records the restart and returns its backoff.
func (p *proc) restarting(end ending) (time.Duration, int) {
	tm := p.s.cfg.Timing
	p.mu.Lock()
	p.restarts++
	n := p.restarts
	code := end.code
	p.state, p.since, p.exitCode, p.inst = StateRestarting, time.Now(), &code, nil
	why := end.reason
	if why == "" {
		why = exitWhy(code)
	}
	p.reason = p.plan.redact(fmt.Sprintf("%s; restart %d of %d", why, n, p.s.cfg.Limits.RestartLimit))
	reason := p.reason
	p.mu.Unlock()
	_ = p.persist()
	p.mail.add(p.baseMail(MailRestart, StateRestarting, &code, reason, n))
	delay := tm.RestartBackoff
	for i := 1; i < n && delay < tm.RestartMaxBackoff; i++ {
		delay *= 2
	}
	return min(delay, tm.RestartMaxBackoff), n
}

// finish makes the state final: the record, the mails, the limits.
func (p *proc) finish(state State, code int, reason string, readyOK bool) {
	now := time.Now()
	reason = p.plan.redact(reason)
	p.mu.Lock()
	if p.outputCut {
		reason = strings.TrimPrefix(reason+"; "+launcher.OutputCutNote, "; ")
	}
	p.state, p.since, p.ended, p.reason, p.inst = state, now, now, reason, nil
	if code >= 0 {
		c := code
		p.exitCode = &c
	}
	answer := !p.readySent
	p.readySent = true
	held := p.holdCompletionLocked()
	p.mu.Unlock()
	_ = p.persist()
	if p.logs != nil {
		p.logs.close()
	}
	if p.dig != nil {
		p.dig.close()
	}
	if !held {
		p.mail.add(p.exitMail())
	}
	p.s.finished(p)
	if answer {
		if readyOK {
			p.readyCh <- nil
		} else {
			p.readyCh <- errors.New(reason)
		}
	}
	close(p.done)
}

// waitDone waits until the process is final, d passes or ctx ends.
func (p *proc) waitDone(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

func (p *proc) final() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.Final()
}

// endedAt is when p finished, and whether it has.
func (p *proc) endedAt() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended, p.state.Final()
}

func (p *proc) currentState() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// drop forgets the process: its record file and logs are removed, and it
// is never persisted again.
func (p *proc) drop() {
	p.persistMu.Lock()
	defer p.persistMu.Unlock()
	p.dropped = true
	if dir := p.s.cfg.StateDir; dir != "" {
		removeRecord(dir, p.id)
		removeLogs(dir, p.id)
	}
}
