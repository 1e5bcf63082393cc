package supervisor

import (
	"fmt"

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

// handle is the process's Handle now.
func (p *proc) handle() Handle {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Handle{Process: p.id, Tool: p.tool, Status: p.state, Since: p.since, Runtime: p.runtime}
}

// noOutput is the page of a process whose output is not in memory.
func (p *proc) noOutput() Page {
	pg := Page{Chunks: []Chunk{}, Note: "this process belonged to a supervisor that is gone; its output was not kept in memory"}
	if p.logPaths != nil {
		pg.Note += fmt.Sprintf("; see the log files %q and %q", p.logPaths.Stdout, p.logPaths.Stderr)
	}
	return pg
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

// persist writes the record (the latest state: the snapshot is taken
// under persistMu, so writes cannot land out of order).
func (p *proc) persist() {
	dir := p.s.cfg.StateDir
	if dir == "" {
		return
	}
	p.persistMu.Lock()
	defer p.persistMu.Unlock()
	if p.dropped {
		return
	}
	if err := writeRecord(dir, p.record()); err != nil {
		p.s.logf("%v", err)
	}
}

func (p *proc) record() Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Record{
		ID: p.id, Session: p.session, Kind: p.kind, Tool: p.tool, Capability: p.capability,
		Name: p.name, Label: p.label, Command: p.command,
		PID: p.pid, PGID: p.pid, PIDStart: p.pidStart, State: p.state, Since: p.since, Restarts: p.restarts,
		ExitCode: p.exitCode, Reason: p.reason, Started: p.started, Logs: p.logPaths,
		Runtime: p.runtime, Owner: p.s.owner,
	}
	if !p.ended.IsZero() {
		e := p.ended
		r.Ended = &e
	}
	return r
}
