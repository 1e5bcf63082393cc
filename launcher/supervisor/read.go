package supervisor

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Status returns the process's status with the ends of its output. With
// wait > 0 (at most MaxWait: a longer wait is capped, never refused) it
// first waits until the process finishes, wait passes or ctx ends,
// whichever comes first; the status is returned either way. A process that
// finishes during that wait has its completion delivered by this answer:
// it is not mailed (completion surfaces once, see inline.go). Errors:
// ErrBadSession, ErrUnknownProcess.
func (s *Supervisor) Status(ctx context.Context, sessionID, ref string, wait time.Duration) (Status, error) {
	p, err := s.lookup(sessionID, ref)
	if err != nil {
		return Status{}, err
	}
	if wait <= 0 {
		return p.status(true), nil
	}
	return p.waitInline(ctx, min(wait, MaxWait)), nil
}

// Wait waits until the process finishes (no cap but ctx) and returns its
// final status with the ends of its output; a completion delivered so is
// not mailed (inline.go). When ctx ends first it returns the current
// status and ctx's error.
func (s *Supervisor) Wait(ctx context.Context, sessionID, ref string) (Status, error) {
	p, err := s.lookup(sessionID, ref)
	if err != nil {
		return Status{}, err
	}
	if !p.beginInline() {
		return p.status(true), nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	st, final := p.endInline(ctx)
	p.addOutput(&st, true)
	if final {
		return st, nil
	}
	return st, fmt.Errorf("waiting for process %s: %w", p.id, ctx.Err())
}

// List returns the session's processes, live and finished, in start
// order, without output tails. An unknown session has none.
func (s *Supervisor) List(sessionID string) ([]Status, error) {
	if err := checkSession(sessionID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var ps []*proc
	if sess := s.sessions[sessionID]; sess != nil {
		ps = slices.Clone(sess.procs)
	}
	s.mu.Unlock()
	out := make([]Status, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.status(false))
	}
	return out, nil
}

// Output returns a page of the process's output from cursor (Ring.Read:
// at most max bytes, ≤ MaxPageBytes). A process loaded from a dead
// supervisor's record has no output in memory: its page is empty and its
// Note says where the log files are, if any. Errors: ErrBadSession,
// ErrUnknownProcess, ErrCursorAhead, ErrPageTooSmall.
func (s *Supervisor) Output(sessionID, ref string, cursor int64, max int) (Page, error) {
	p, err := s.lookup(sessionID, ref)
	if err != nil {
		return Page{}, err
	}
	if p.ring == nil {
		return p.noOutput(), nil
	}
	pg, err := p.ring.Read(cursor, max)
	if err != nil {
		return Page{}, fmt.Errorf("process %s: %w", p.id, err)
	}
	return pg, nil
}

// Tail returns the last n bytes of the process's output (at most
// MaxPageBytes; n ≤ 0 means MaxPageBytes), starting on a character
// boundary.
func (s *Supervisor) Tail(sessionID, ref string, n int) (Page, error) {
	p, err := s.lookup(sessionID, ref)
	if err != nil {
		return Page{}, err
	}
	if p.ring == nil {
		return p.noOutput(), nil
	}
	return p.ring.Tail(n), nil
}

// Inbox returns the session's mails after cursor (0 for all), at most
// max (≤ 0 or above MaxInbox means MaxInbox). Reading consumes nothing:
// the same cursor gives the same mails, unless the bounded mailbox dropped
// them (Resumed says so). Errors: ErrBadSession, ErrCursorAhead.
func (s *Supervisor) Inbox(sessionID string, cursor int64, max int) (InboxPage, error) {
	if err := checkSession(sessionID); err != nil {
		return InboxPage{}, err
	}
	if max <= 0 || max > MaxInbox {
		max = MaxInbox
	}
	s.mu.Lock()
	sess := s.sessions[sessionID]
	s.mu.Unlock()
	if sess == nil {
		if cursor != 0 {
			return InboxPage{}, fmt.Errorf("reading the inbox at cursor %d: %w (the session has no mail)", cursor, ErrCursorAhead)
		}
		return InboxPage{Mails: []Mail{}}, nil
	}
	return sess.mail.read(cursor, max)
}

// Subscribe returns a channel that receives each new mail of the session
// as it is appended (for push notifications), and a function that ends
// the subscription. The channel is a nudge, not the record: when its
// buffer (64 mails) is full, mails are not sent on it, so a subscriber
// reads the Inbox from its last cursor when woken. CloseSession closes
// the channel.
func (s *Supervisor) Subscribe(sessionID string) (<-chan Mail, func(), error) {
	if err := checkSession(sessionID); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	sess := s.session(sessionID)
	s.mu.Unlock()
	ch, cancel := sess.mail.subscribe()
	return ch, cancel, nil
}
