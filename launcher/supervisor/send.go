package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/protocol"
)

// Send writes event to a running service's stdin and answers with what
// the process emitted right after (DESIGN.md §5, the v2 spec's T.send):
// the event is validated against the declared process.input.event
// (Config.CompileSchema), then framed as the tool declares (jsonl: the
// event as one compact JSON line; lines: a JSON string, written as its
// value and a newline). The answer collects the output events that arrive
// until Timing.SendQuiet passes without one (counted from the write when
// none comes), at most Timing.SendMax, or until the process ends or ctx
// ends; Status is SendAccepted when there were none. The same events are
// also mailed as the tool's digest says.
//
// Errors (nothing is written): ErrNoInput when the tool declares no
// process.input; ErrInvalidEvent when the event is not JSON, breaks the
// schema, is a lines event that is not a one-line string, or is longer
// than MaxSendBytes framed (or than the process's stdin pipe holds);
// ErrNotRunning when the process is not running (starting, stopping,
// restarting or finished); ctx's error when it ended while the send waited
// for its turn. Sends to one process take turns: each waits until the
// answer window of the one before it closed, so that an answer holds only
// what its own event caused. A process that does not make room in its stdin
// within Timing.StdinWrite fails the send with nothing written: an event
// is written whole once the pipe has room for all of it, so a send never
// leaves part of an event in the pipe (on Linux, where the pipe's room can
// be read).
func (s *Supervisor) Send(ctx context.Context, sessionID, ref string, event json.RawMessage) (SendResult, error) {
	p, err := s.lookup(sessionID, ref)
	if err != nil {
		return SendResult{}, err
	}
	if p.plan == nil || p.plan.inFraming == "" {
		return SendResult{}, fmt.Errorf("sending to process %s (%s): %w: the tool declares no process.input", p.id, p.tool, ErrNoInput)
	}
	if n := len(event); n > MaxSendBytes {
		return SendResult{}, fmt.Errorf("sending to process %s (%s): %w: the event is %d bytes, more than the %d a send writes", p.id, p.tool, ErrInvalidEvent, n, MaxSendBytes)
	}
	line, err := frameEvent(p.plan.inFraming, p.plan.inValidator, event)
	if err == nil && len(line) > MaxSendBytes {
		err = fmt.Errorf("%w: the event is %d bytes framed, more than the %d a send writes", ErrInvalidEvent, len(line), MaxSendBytes)
	}
	if err != nil {
		return SendResult{}, fmt.Errorf("sending to process %s (%s): %w", p.id, p.tool, err)
	}
	// Sends take turns, from before the write to the end of the answer
	// window: the answer of one is what the service emitted after its
	// event and before the next send's, never another send's events (ten
	// concurrent sends each answered with all ten events).
	select {
	case p.sendTurn <- struct{}{}:
		defer func() { <-p.sendTurn }()
	case <-p.done:
	case <-ctx.Done():
		return SendResult{}, fmt.Errorf("sending to process %s (%s): waiting for the sends before it: %w", p.id, p.tool, ctx.Err())
	}
	p.mu.Lock()
	in, state := p.inst, p.state
	if state != StateRunning || in == nil {
		p.mu.Unlock()
		return SendResult{}, fmt.Errorf("sending to process %s (%s): %w (it is %s)", p.id, p.tool, ErrNotRunning, state)
	}
	// Where stdout stands now: what the service wrote up to here is no
	// answer (stdout_pipe.go). Taken before the listener is added, which
	// is before the write, so an instant answer is not missed.
	l := &listener{ch: make(chan launcher.Event, 256), in: in, after: in.stdoutPos()}
	p.addListener(l)
	p.mu.Unlock()
	defer p.removeListener(l)
	if err := in.writeStdin(line, s.cfg.Timing.StdinWrite); err != nil {
		return SendResult{}, fmt.Errorf("sending to process %s (%s): %w", p.id, p.tool, err)
	}
	res := SendResult{Process: p.id, Status: SendAccepted}
	res.Events, res.Elided = collect(ctx, l, in, s.cfg.Timing, s.cfg.Limits.MailEvents)
	if len(res.Events) > 0 || res.Elided > 0 {
		res.Status = SendAnswered
	}
	return res, nil
}

// collect gathers the answer window's events.
func collect(ctx context.Context, l *listener, in *instance, tm Timing, keep int) ([]launcher.Event, int) {
	var events []launcher.Event
	elided := 0
	quiet := time.NewTimer(tm.SendQuiet)
	defer quiet.Stop()
	most := time.NewTimer(tm.SendMax)
	defer most.Stop()
	add := func(e launcher.Event) {
		if len(events) < keep {
			events = append(events, e)
		} else {
			elided++
		}
	}
wait:
	for {
		select {
		case e := <-l.ch:
			add(e)
			quiet.Reset(tm.SendQuiet)
		case <-in.delivered():
			break wait
		case <-quiet.C:
			break wait
		case <-most.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	for len(l.ch) > 0 { // what arrived meanwhile
		add(<-l.ch)
	}
	return events, elided + int(l.dropped.Load())
}

// frameEvent validates event (v nil: JSON syntax only) and frames it as
// one line of the input framing. Errors wrap ErrInvalidEvent.
func frameEvent(framing string, v EventValidator, event json.RawMessage) ([]byte, error) {
	raw := bytes.TrimSpace(event)
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: the event is empty", ErrInvalidEvent)
	}
	if v != nil {
		if _, err := v.Validate(raw); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
		}
	} else if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: the event is not JSON", ErrInvalidEvent)
	}
	if framing == protocol.FramingLines {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: the tool reads lines: send a JSON string", ErrInvalidEvent)
		}
		if strings.ContainsAny(s, "\r\n") {
			return nil, fmt.Errorf("%w: the tool reads lines: the string must hold no line break", ErrInvalidEvent)
		}
		return []byte(s + "\n"), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// stdoutPos is how many bytes the run has written to stdout so far (0
// without an owned stdout pipe: every event then counts).
func (in *instance) stdoutPos() int64 {
	if in.out == nil {
		return 0
	}
	return in.out.produced()
}

// MaxSendBytes bounds one sent event, framed (its line and newline). The
// stdin pipe of a process that reads events is grown to stdinPipeBytes, so
// that an event of this size fits in it whole; a system that refuses to
// grow the pipe bounds sends by what it holds.
const MaxSendBytes = 512 << 10

// stdinPipeBytes is the size asked for the stdin pipe of a process that
// reads events: twice MaxSendBytes, within Linux's default
// /proc/sys/fs/pipe-max-size (1 MiB).
const stdinPipeBytes = 2 * MaxSendBytes

// writeStdin writes one framed event, bounded by timeout: once the pipe
// has room for all of it (waitRoom), so that the event is never left half
// written.
func (in *instance) writeStdin(line []byte, timeout time.Duration) error {
	in.stdinMu.Lock()
	defer in.stdinMu.Unlock()
	if in.stdin == nil || in.stdinErr != nil {
		if in.stdinErr != nil && !errors.Is(in.stdinErr, ErrNotRunning) {
			return fmt.Errorf("its stdin is unusable: %w", in.stdinErr)
		}
		return fmt.Errorf("%w: its stdin is closed", ErrNotRunning)
	}
	deadline := time.Now().Add(timeout)
	if err := waitRoom(in.stdin, len(line), deadline); err != nil {
		return err
	}
	_ = in.stdin.SetWriteDeadline(deadline)
	n, err := in.stdin.Write(line)
	if err == nil {
		return nil
	}
	if n > 0 {
		in.stdinErr = errors.New("an earlier event was only partly written, so its input framing is broken")
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the process did not read its stdin within %s", timeout)
	case errors.Is(err, syscall.EPIPE), errors.Is(err, os.ErrClosed):
		return fmt.Errorf("%w: it closed its stdin", ErrNotRunning)
	}
	return fmt.Errorf("writing to its stdin: %w", err)
}

// waitRoom waits until the pipe f writes to can take n more bytes whole,
// or deadline passes (an error: nothing is written). An event longer than
// the pipe can ever hold is ErrInvalidEvent. Where the pipe's state cannot
// be read it returns at once.
func waitRoom(f *os.File, n int, deadline time.Time) error {
	// A partly read page of the pipe is not reused until it is read whole.
	page := os.Getpagesize()
	for {
		capacity, unread, ok := pipeState(f)
		switch {
		case !ok:
			return nil
		case n > capacity-page:
			return fmt.Errorf("%w: the event is %d bytes framed, more than its stdin pipe holds (%d)", ErrInvalidEvent, n, capacity-page)
		case capacity-unread-page >= n:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("the process did not read its stdin (%d bytes waiting) within the send's time; nothing was written", unread)
		}
		time.Sleep(2 * time.Millisecond) // the reader frees room: poll it
	}
}

// wantEvent says whether the next output event is needed: a stream keeps
// its last events, the digest has room for it, or a Send waits for events.
func (p *proc) wantEvent() bool {
	return p.evs != nil || p.nlisten.Load() > 0 || (p.dig != nil && p.dig.wants())
}

// skipEvent counts an event nobody needed into the digest.
func (p *proc) skipEvent() {
	if p.dig != nil {
		p.dig.skip()
	}
}

// onEvent receives the output events of run in (from its stdout copier);
// end is the stdout position where e ends (framer.end).
func (p *proc) onEvent(e launcher.Event, in *instance, end int64) {
	if p.evs != nil {
		p.evs.add(e)
	}
	if p.dig != nil {
		p.dig.add(e)
	}
	p.lmu.Lock()
	for l := range p.listeners {
		if l.in != in || end <= l.after {
			continue // another run's, or written before the send
		}
		select {
		case l.ch <- e:
		default:
			l.dropped.Add(1)
		}
	}
	p.lmu.Unlock()
}

func (p *proc) addListener(l *listener) {
	p.lmu.Lock()
	p.listeners[l] = struct{}{}
	p.nlisten.Add(1)
	p.lmu.Unlock()
}

func (p *proc) removeListener(l *listener) {
	p.lmu.Lock()
	delete(p.listeners, l)
	p.nlisten.Add(-1)
	p.lmu.Unlock()
}
