package supervisor

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Stop stops the process (DESIGN.md §5): the declared cancel (SIGTERM by
// default, SIGINT, or the {"send": EVENT} event written to stdin; for a
// background command SIGINT, CommandCancel) goes to its process group,
// then SIGKILL after runtime.timeout.stop (background commands:
// Timing.StopGrace); force sends SIGKILL at once (also to a
// process already stopping). It waits for the process to end and returns
// its final status with the tail of its output. Stop is idempotent: a
// finished process returns its final state. When ctx ends first it
// returns the current status and ctx's error (the SIGKILL still follows).
// A descendant that left the process group (setsid) is stopped too:
// bwrap's pid namespace, the sandbox helper's subreaper (landlock, none).
// A lost process (its supervisor died) whose processes still run is
// killed at once, found again by pid and start time (never a reused pid);
// its state stays lost and its reason says so.
// When the final record cannot be written to the state dir, the status
// comes with a *RecordError.
func (s *Supervisor) Stop(ctx context.Context, sessionID, ref string, force bool) (Status, error) {
	p, err := s.lookup(sessionID, ref)
	if err != nil {
		return Status{}, err
	}
	p.stopLost()
	p.requestStop(force)
	select {
	case <-p.done:
		return p.status(true), p.recordError()
	case <-ctx.Done():
		return p.status(true), fmt.Errorf("stopping process %s: %w", p.id, ctx.Err())
	}
}

// CloseSession stops every live process of the session with its declared
// cancel (then SIGKILL after its stop grace), waits for them, and forgets
// the session: its records (in memory and on disk), logs and mailbox; its
// subscriptions' channels are closed. When ctx ends first it returns ctx's
// error and keeps the session (the processes are still being stopped).
// Lost processes still running are killed first (see Stop).
func (s *Supervisor) CloseSession(ctx context.Context, sessionID string) error {
	if err := checkSession(sessionID); err != nil {
		return err
	}
	s.stopLostOf(sessionID)
	for {
		s.mu.Lock()
		sess := s.sessions[sessionID]
		if sess == nil {
			s.mu.Unlock()
			return nil
		}
		var live []*proc
		for _, p := range sess.procs {
			if !p.final() {
				live = append(live, p)
			}
		}
		if len(live) == 0 {
			// Forgotten under the same lock that found nothing live, so a
			// start racing the close cannot be orphaned.
			delete(s.sessions, sessionID)
			for _, p := range sess.procs {
				delete(s.procs, p.id)
			}
			s.mu.Unlock()
			for _, p := range sess.procs {
				p.drop()
			}
			sess.mail.closeSubscribers()
			return nil
		}
		s.mu.Unlock()
		if err := stopAll(ctx, live); err != nil {
			return fmt.Errorf("closing session %q: %w", sessionID, err)
		}
	}
}

// Close refuses new starts (ErrClosed) and stops every live process of
// every session with its declared cancel, waiting for them until ctx ends.
// Records stay on disk in their final states.
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	ps := make([]*proc, 0, len(s.procs))
	for _, p := range s.procs {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	if err := stopAll(ctx, ps); err != nil {
		return fmt.Errorf("closing the supervisor: %w", err)
	}
	s.mu.Lock()
	if s.slots != nil && s.live == 0 {
		s.slots.close() // every slot is free: drop the files
		s.slots = nil
	}
	s.mu.Unlock()
	return nil
}

// stopAll asks every process to stop, then waits for all of them.
func stopAll(ctx context.Context, ps []*proc) error {
	for _, p := range ps {
		p.requestStop(false)
	}
	for _, p := range ps {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// requestStop asks the process to stop (idempotent); force also asks for
// SIGKILL at once. A final process is left as it is.
func (p *proc) requestStop(force bool) {
	p.mu.Lock()
	if p.state.Final() {
		p.mu.Unlock()
		return
	}
	// The force is in place before the stop request is: the goroutine
	// that wakes up at stopCh must see killCh closed already, or it sends
	// the cancel first (a background command then ends with SIGINT, 130,
	// instead of SIGKILL, 137).
	if force && !p.forced {
		p.forced = true
		close(p.killCh)
	}
	changed := !p.stopReq
	if changed {
		p.stopReq = true
		close(p.stopCh)
		p.state, p.since = StateStopping, time.Now()
	}
	p.mu.Unlock()
	if changed {
		_ = p.persist() // Stop reports the final record's error
	}
}

// stopRun sends the declared cancel to the run's process group (none when
// the stop is forced), then SIGKILL after the stop grace or at a forced
// stop, and returns the exit code once the run has exited.
func (p *proc) stopRun(in *instance) int {
	select {
	case <-p.killCh:
		_ = in.sp.Signal(syscall.SIGKILL)
		return p.reap(in)
	default:
	}
	p.cancel(in)
	grace := time.NewTimer(p.plan.stopGrace)
	defer grace.Stop()
	select {
	case <-in.sp.Done():
	case <-grace.C:
		_ = in.sp.Signal(syscall.SIGKILL)
	case <-p.killCh:
		_ = in.sp.Signal(syscall.SIGKILL)
	}
	return p.reap(in)
}

// cancel sends the declared cancel: the event on stdin, or a signal (also
// when the event cannot be written).
func (p *proc) cancel(in *instance) {
	pl := p.plan
	if len(pl.cancelSend) > 0 {
		if line, err := frameEvent(pl.inFraming, nil, pl.cancelSend); err == nil {
			if in.writeStdin(line, p.s.cfg.Timing.StdinWrite) == nil {
				return
			}
		}
		_ = in.sp.Signal(syscall.SIGTERM)
		return
	}
	_ = in.sp.Signal(pl.cancelSig)
}
