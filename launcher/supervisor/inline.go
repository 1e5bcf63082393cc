package supervisor

import (
	"context"
	"errors"
	"time"
)

// Completion surfaces once (DESIGN.md §5; the bash-daemon seed's "when
// wait_seconds already delivered the terminal result inline, no todo is
// created"). A caller that waits for a process in order to return its
// final state inline registers as an inline waiter before the process can
// finish: RunCommand's inline wait, Status with a wait, and Wait. While
// at least one such caller waits, finish holds the completion mail back;
// the last of them to return decides: when one of them returned the final
// state, the completion was delivered and is never mailed (so no inbox
// entry and no MCP notification follows); when all of them gave up first
// (their wait passed, or their client went away), it is mailed then.
//
// What does not count as an inline delivery: a Status without a wait, or
// any call that finds the process already final (its completion was mailed
// when it finished, before the call), Start (a start that fails is mailed,
// as it always was) and Stop, which the seed treats as a request whose
// completion "surfaces like any completion".

// beginInline registers an inline waiter. It returns false, registering
// nothing, when the process is final already.
func (p *proc) beginInline() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.Final() {
		return false
	}
	p.inline++
	return true
}

// endInline ends an inline wait registered by beginInline and returns the
// status (without its output: see addOutput), taken as the wait ended, and
// whether it is final; a final one is what the caller returns. The
// completion then counts as delivered unless ctx was canceled (the
// caller's client went away; a deadline is the caller's own bound, and it
// still answers). When this was the last waiter of a held completion that
// nobody delivered, the completion is mailed now.
func (p *proc) endInline(ctx context.Context) (Status, bool) {
	p.mu.Lock()
	p.inline--
	st := p.statusLocked()
	mail := false
	if st.Done && p.held {
		if !errors.Is(ctx.Err(), context.Canceled) {
			p.delivered = true
		}
		if p.inline == 0 {
			mail = !p.delivered
			p.held = false
		}
	}
	p.mu.Unlock()
	if mail {
		p.mail.add(p.exitMail())
	}
	return st, st.Done
}

// holdCompletionLocked is finish's decision, taken under p.mu as the state
// becomes final: true when inline waiters are registered, who will deliver
// the completion (or mail it, see endInline).
func (p *proc) holdCompletionLocked() bool {
	p.held = p.inline > 0
	return p.held
}

// waitInline waits, as an inline waiter, until the process is final, d
// passes or ctx ends, and returns the status with the ends of its output.
func (p *proc) waitInline(ctx context.Context, d time.Duration) Status {
	if !p.beginInline() {
		return p.status(true)
	}
	p.waitDone(ctx, d)
	st, _ := p.endInline(ctx)
	p.addOutput(&st, true)
	return st
}
