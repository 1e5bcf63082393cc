package supervisor

import (
	"fmt"
	"strings"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// lostReason is the reason of a record found unfinished, its supervisor
// dead: whether its processes are still there, checked now. Every tool
// runs under a reaper that dies with its supervisor (sandbox: bwrap's
// --die-with-parent, the helper's parent-death signal), so they normally
// are not; a leader found alive (a stopped helper, say) is left as it is
// until `processes stop` asks.
func lostReason(r Record) string {
	why := fmt.Sprintf("its supervisor (pid %d) died while it ran; it was not restarted", r.Owner.PID)
	switch {
	case r.PID <= 0:
		return why
	case r.PIDStart == 0:
		return why + fmt.Sprintf("; its record cannot tell process group %d from a later one, so it is never signalled", r.PGID)
	case leaderAlive(r.PID, r.PIDStart):
		return why + fmt.Sprintf("; its processes still run (pid %d): stop kills them", r.PID)
	}
	return why + "; none of its processes is left"
}

// leaderAlive reports whether pid is still the process that started at
// start.
func leaderAlive(pid int, start uint64) bool {
	st, state, err := procStartTime(pid)
	return err == nil && st == start && state != 'Z' && state != 'X'
}

// stopLost kills what is left of a lost process: the process it recorded
// (found again by pid and start time, never a reused pid), every process
// below it and the rest of its session and group (sandbox.KillTree). It
// has no supervisor to follow a declared cancel with a stop grace, so the
// kill is at once. The reason says what was done; the state stays lost.
func (p *proc) stopLost() {
	p.mu.Lock()
	pid, start, state := p.pid, p.pidStart, p.state
	p.mu.Unlock()
	if state != StateLost {
		return
	}
	n, err := sandbox.KillTree(pid, start)
	if err != nil {
		return // nothing of it is left, or nothing can be found safely
	}
	p.mu.Lock()
	why, _, _ := strings.Cut(p.reason, "; ")
	p.reason = fmt.Sprintf("%s; stopped by request: %d remaining processes were killed", why, n)
	p.mu.Unlock()
	p.persist()
}

// stopLostOf stops the lost processes of a session (see stopLost).
func (s *Supervisor) stopLostOf(sessionID string) {
	s.mu.Lock()
	var lost []*proc
	if sess := s.sessions[sessionID]; sess != nil {
		for _, p := range sess.procs {
			if p.currentState() == StateLost {
				lost = append(lost, p)
			}
		}
	}
	s.mu.Unlock()
	for _, p := range lost {
		p.stopLost()
	}
}
