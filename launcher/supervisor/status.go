package supervisor

import (
	"fmt"
	"slices"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
)

// status is the process's Status; tail adds the ends of its output.
func (p *proc) status(tail bool) Status {
	p.mu.Lock()
	st := p.statusLocked()
	p.mu.Unlock()
	p.addOutput(&st, tail)
	return st
}

// statusLocked is the Status without its output. p.mu is held.
func (p *proc) statusLocked() Status {
	st := Status{
		Handle:     Handle{Process: p.id, Tool: p.tool, Status: p.state, Since: p.since, Runtime: p.runtime},
		Session:    p.session,
		Kind:       p.kind,
		Capability: p.capability,
		Name:       p.name,
		Label:      p.label,
		Command:    p.command,
		Done:       p.state.Final(),
		Restarts:   p.restarts,
		Reason:     p.reason,
		PID:        p.pid,
		Started:    p.started,
		Logs:       p.logPaths,
		Notes:      append([]string(nil), p.notes...),
	}
	if p.recordErr != nil {
		st.Notes = append(st.Notes, fmt.Sprintf("its record could not be written to the state dir (%v); the write is retried every %s, and until it lands a supervisor started after a crash would show an older state", p.recordErr, recordRetry))
	}
	if p.exitCode != nil {
		c := *p.exitCode
		st.ExitCode = &c
	}
	if !p.ended.IsZero() {
		e := p.ended
		st.Ended = &e
	}
	return st
}

// addOutput adds the ring's bounds and, with tail, the ends of the output.
func (p *proc) addOutput(st *Status, tail bool) {
	if p.ring == nil {
		if p.recorded != nil {
			// Nothing is held: the cursors before Head are gone.
			st.Output = OutputRange{Earliest: p.recorded.Head, Head: p.recorded.Head}
			st.Notes = append(st.Notes, p.lostOutput())
		}
		return
	}
	st.Output.Earliest, st.Output.Head = p.ring.Bounds()
	if !tail {
		return
	}
	if p.evs != nil {
		st.Events, st.EventCount = p.evs.last(TailBytes)
	} else {
		out := p.ring.StreamTail(Stdout, TailBytes)
		st.Stdout = &out
	}
	errs := p.ring.StreamTail(Stderr, TailBytes)
	st.Stderr = &errs
}

// maxNotes bounds Status.Notes; a note already there is not added again.
const maxNotes = 8

// note records something the caller should know about the process that
// is neither its state nor its output (Status.Notes).
func (p *proc) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.notes) < maxNotes && !slices.Contains(p.notes, msg) {
		p.notes = append(p.notes, msg)
	}
}

// handle is the process's Handle now.
func (p *proc) handle() Handle {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Handle{Process: p.id, Tool: p.tool, Status: p.state, Since: p.since, Runtime: p.runtime}
}

// noOutput is the page of a process whose output is not in memory.
func (p *proc) noOutput() Page {
	pg := Page{Chunks: []Chunk{}, Note: "this process belonged to a supervisor that is gone; its output was not kept in memory"}
	if p.recorded != nil {
		h := p.recorded.Head
		pg.Note, pg.Cursor, pg.Next, pg.Earliest, pg.Head = p.lostOutput(), h, h, h, h
	} else if p.logPaths != nil {
		pg.Note += fmt.Sprintf("; see the log files %q and %q", p.logPaths.Stdout, p.logPaths.Stderr)
	}
	return pg
}

// lostOutput says what output of a process loaded from a dead
// supervisor's record went with that supervisor's memory.
func (p *proc) lostOutput() string {
	o := p.recorded
	msg := fmt.Sprintf("this process belonged to a supervisor that is gone: the %d bytes of output it had written by %s (cursors 0 to %d: %d of stdout, %d of stderr) were held in that supervisor's memory and are lost, and so is anything written after that", o.Head, o.At.Format(time.RFC3339), o.Head, o.Stdout, o.Stderr)
	if p.logPaths != nil {
		return msg + fmt.Sprintf("; the log files %q and %q keep them", p.logPaths.Stdout, p.logPaths.Stderr)
	}
	return msg + "; a supervisor with log files (serve --log-bytes) keeps them on disk"
}

func (p *proc) baseMail(kind string, state State, code *int, reason string, restarts int) Mail {
	return Mail{
		From: "process:" + p.id, Process: p.id, Tool: p.tool, Name: p.name, Label: p.label,
		Kind: kind, State: state, ExitCode: code, Reason: reason, Restarts: restarts,
	}
}

// exitMail is the completion mail of a final process.
func (p *proc) exitMail() Mail {
	p.mu.Lock()
	defer p.mu.Unlock()
	var code *int
	if p.exitCode != nil {
		c := *p.exitCode
		code = &c
	}
	m := p.baseMail(MailExit, p.state, code, p.reason, p.restarts)
	if p.evs != nil {
		// A stream's completion carries its last events, as its result would.
		var n int
		m.Events, n = p.evs.last(0)
		m.Elided = n - len(m.Events)
	}
	return m
}

// mailEvents is the digester's delivery.
func (p *proc) mailEvents(events []launcher.Event, elided int) {
	m := p.baseMail(MailEvents, "", nil, "", 0)
	m.Events, m.Elided = events, elided
	p.mail.add(m)
}

// recordRetry is how often a record that could not be written is written
// again, until it lands (or the supervisor is closed).
const recordRetry = time.Second

// persist writes the record (the latest state: the snapshot is taken
// under persistMu, so writes cannot land out of order). When it cannot be
// written, the error is kept for the process's Status.Notes and the
// callers that report it (*RecordError), and the write is retried every
// recordRetry until it lands; it is returned too.
func (p *proc) persist() error {
	dir := p.s.cfg.StateDir
	if dir == "" {
		return nil
	}
	p.persistMu.Lock()
	defer p.persistMu.Unlock()
	if p.dropped {
		return nil
	}
	err := writeRecord(dir, p.record())
	p.mu.Lock()
	p.recordErr = err
	p.mu.Unlock()
	if err != nil {
		p.s.logf("%v", err)
		if !p.retrying {
			p.retrying = true
			time.AfterFunc(recordRetry, p.retryPersist)
		}
	}
	return err
}

// retryPersist writes a record that could not be written, unless the
// supervisor was closed meanwhile.
func (p *proc) retryPersist() {
	p.persistMu.Lock()
	p.retrying = false
	p.persistMu.Unlock()
	if !p.s.isClosed() {
		_ = p.persist()
	}
}

// recordError is the *RecordError of the process's latest record, or nil
// when it was written.
func (p *proc) recordError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.recordErr == nil {
		return nil
	}
	return &RecordError{Process: p.id, State: p.state, Err: p.recordErr}
}

func (p *proc) record() Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Record{
		ID: p.id, Session: p.session, Kind: p.kind, Tool: p.tool, Capability: p.capability,
		Name: p.name, Label: p.label, Command: p.command,
		PID: p.pid, PGID: p.pid, PIDStart: p.pidStart, State: p.state, Since: p.since, Restarts: p.restarts,
		ExitCode: p.exitCode, Reason: p.reason, Started: p.started, Logs: p.logPaths,
		Runtime: p.runtime, Owner: p.s.owner, Output: p.recorded,
	}
	if p.ring != nil {
		_, head := p.ring.Bounds()
		if head > 0 {
			r.Output = &RecordedOutput{Head: head, Stdout: p.ring.Written(Stdout), Stderr: p.ring.Written(Stderr), At: time.Now().UTC()}
		}
	}
	if !p.ended.IsZero() {
		e := p.ended
		r.Ended = &e
	}
	return r
}
