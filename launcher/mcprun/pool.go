package mcprun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/mcpbackend"
	"github.com/toolbox-dev/toolbox/runspec"
)

// Back-off of Pool restarts: the first restart after a failure is
// immediate, each further consecutive failure doubles the wait from
// BackoffMin up to BackoffMax. A call that succeeds resets it.
const (
	BackoffMin = time.Second
	BackoffMax = 30 * time.Second
	// listChangedTimeout bounds the check a tools/list_changed triggers.
	listChangedTimeout = 30 * time.Second
)

// Pool is the launcher.MCPRunner of the servers (`toolbox mcp`, `toolbox
// serve`): one warm server per owner (launcher.MCPCall.Session) and
// server, started at the owner's first call of it. See the package doc.
// Its methods are safe for concurrent use; the zero value is not: use
// NewPool.
type Pool struct {
	launch mcpbackend.Launch
	logf   func(format string, args ...any)
	now    func() time.Time

	mu      sync.Mutex
	entries map[poolKey]*entry
	closed  bool
}

// poolKey is an owner's server on one workspace (a server's grants may
// name it).
type poolKey struct {
	owner, server string
	workspace     runspec.Workspace
}

// entry is one owner's server: its live session (nil until started or
// after it died), the consecutive failures and when the next start may
// happen, and the drift that refuses it for good.
type entry struct {
	mu       sync.Mutex
	sess     *mcpbackend.Session
	failures int
	notUntil time.Time
	lastErr  error
	drift    error
	closed   bool
	// verified: a session of this entry listed its pins once, so drift
	// found later is a change during the owner's session.
	verified bool
}

// NewPool returns an empty pool. launch tunes how servers start
// (StartTimeout); logf, when not nil, is told of restarts and of drift
// found by a tools/list_changed check.
func NewPool(launch mcpbackend.Launch, logf func(format string, args ...any)) *Pool {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Pool{launch: launch, logf: logf, now: time.Now, entries: map[poolKey]*entry{}}
}

var _ launcher.MCPRunner = (*Pool)(nil)

// CallMCP calls the tool on the owner's warm server, starting it when
// needed (within the back-off), after verifying its listing. A server
// that dies during a call fails that call; the next one starts it again.
func (p *Pool) CallMCP(ctx context.Context, call launcher.MCPCall) (*launcher.MCPResult, bool, error) {
	e, err := p.entry(poolKey{call.Session, call.Server, call.Workspace})
	if err != nil {
		return nil, false, err
	}
	s, err := p.session(ctx, e, call)
	if err != nil {
		return nil, false, err
	}
	if err := verify(ctx, s, call); err != nil {
		var re *launcher.RefusedError
		var de *mcpbackend.DriftError
		if errors.As(err, &re) && errors.As(err, &de) {
			if p.refuse(e, s, err) {
				p.logf("mcp server %q (session %s) changed its tools during the session; its calls are refused: %v", call.Server, call.Session, de)
			}
		} else if d := e.driftErr(); d != nil {
			// Its tools/list_changed check refused the server, and
			// closed the session under this call's listing.
			return nil, false, d
		} else {
			p.lost(e, s, err)
		}
		return nil, false, err
	}
	e.mu.Lock()
	if e.sess == s {
		e.verified = true
	}
	e.mu.Unlock()
	res, started, err := callTool(ctx, s, call)
	if err != nil {
		if s.Broken(err) {
			p.lost(e, s, err)
		}
		return res, started, err
	}
	e.mu.Lock()
	e.failures = 0
	e.mu.Unlock()
	return res, started, nil
}

// driftErr is the drift that refuses e's server, nil when none.
func (e *entry) driftErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.drift
}

// entry returns the owner's entry for a server, creating it.
func (p *Pool) entry(k poolKey) (*entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, &launcher.RefusedError{What: "the MCP server pool is closed", Fix: "start toolbox again"}
	}
	e := p.entries[k]
	if e == nil {
		e = &entry{}
		p.entries[k] = e
	}
	return e, nil
}

// session returns e's live session, starting one when there is none and
// the back-off allows.
func (p *Pool) session(ctx context.Context, e *entry, call launcher.MCPCall) (*mcpbackend.Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return nil, &launcher.RefusedError{What: fmt.Sprintf("mcp server %q: its session is closing", call.Server), Fix: "call again from a new session"}
	case e.drift != nil:
		return nil, e.drift
	case e.sess != nil:
		select {
		case <-e.sess.Done():
			p.logf("mcp server %q (session %s) ended: %s", call.Server, call.Session, orNone(call.Redactor.String(e.sess.Stderr())))
			_ = e.sess.Close()
			e.sess = nil
			e.failures++
			e.lastErr = errors.New("the server exited")
			e.notUntil = p.now().Add(backoff(e.failures))
		default:
			return e.sess, nil
		}
	}
	if wait := e.notUntil.Sub(p.now()); wait > 0 {
		return nil, &launcher.RefusedError{
			What: fmt.Sprintf("mcp server %q failed %d times in a row (last: %v); the next start is in %s", call.Server, e.failures, e.lastErr, wait.Round(100*time.Millisecond)),
			Fix:  "run `toolbox check --probe` to see why the server does not start",
		}
	}
	s, err := start(ctx, p.launch, call, func() { p.listChanged(e, call) })
	var refused *unstarted
	if errors.As(err, &refused) {
		return nil, err
	}
	if err != nil {
		e.failures++
		e.lastErr = err
		e.notUntil = p.now().Add(backoff(e.failures))
		return nil, err
	}
	if e.failures > 0 {
		p.logf("mcp server %q (session %s) restarted after %d failures", call.Server, call.Session, e.failures)
	}
	e.sess = s
	return s, nil
}

// listChanged re-verifies e's session when its server says its tools
// changed; drift refuses the server for the rest of the owner's life. It
// waits for a start in progress (which holds e.mu).
func (p *Pool) listChanged(e *entry, call launcher.MCPCall) {
	e.mu.Lock()
	s := e.sess
	e.mu.Unlock()
	if s == nil {
		return // gone already; the next call starts and verifies another
	}
	ctx, cancel := context.WithTimeout(context.Background(), listChangedTimeout)
	defer cancel()
	if err := verify(ctx, s, call); err != nil {
		var de *mcpbackend.DriftError
		if errors.As(err, &de) && p.refuse(e, s, err) {
			p.logf("mcp server %q (session %s) changed its tools during the session (tools/list_changed); its calls are refused: %v", call.Server, call.Session, de)
		}
	}
}

// refuse stops s and refuses e's server from now on with err. It reports
// whether this was the first refusal of a server that had verified before
// (a change during the session, which the caller logs once).
func (p *Pool) refuse(e *entry, s *mcpbackend.Session, err error) (changed bool) {
	e.mu.Lock()
	if e.drift == nil {
		e.drift = err
		changed = e.verified
	}
	if e.sess == s {
		e.sess = nil
	}
	e.mu.Unlock()
	_ = s.Close()
	return changed
}

// lost forgets a session that failed, counting the failure.
func (p *Pool) lost(e *entry, s *mcpbackend.Session, err error) {
	e.mu.Lock()
	if e.sess == s {
		e.sess = nil
		e.failures++
		e.lastErr = err
		e.notUntil = p.now().Add(backoff(e.failures))
	}
	e.mu.Unlock()
	_ = s.Close()
}

// CloseOwner stops every server of owner and forgets them; a later call
// of that owner starts afresh.
func (p *Pool) CloseOwner(owner string) {
	p.mu.Lock()
	var mine []*entry
	for k, e := range p.entries {
		if k.owner == owner {
			mine = append(mine, e)
			delete(p.entries, k)
		}
	}
	p.mu.Unlock()
	closeEntries(mine)
}

// Close stops every server and refuses later calls.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*entry, 0, len(p.entries))
	for _, e := range p.entries {
		all = append(all, e)
	}
	p.entries = map[poolKey]*entry{}
	p.mu.Unlock()
	closeEntries(all)
}

// closeEntries stops the sessions of es in parallel and waits for them.
func closeEntries(es []*entry) {
	var wg sync.WaitGroup
	for _, e := range es {
		e.mu.Lock()
		s := e.sess
		e.sess, e.closed = nil, true
		e.mu.Unlock()
		if s != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = s.Close()
			}()
		}
	}
	wg.Wait()
}

// backoff is the wait before the start that follows n consecutive
// failures.
func backoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := BackoffMin << (n - 2)
	if d > BackoffMax || d <= 0 {
		return BackoffMax
	}
	return d
}

func orNone(s string) string {
	if s == "" {
		return "no stderr"
	}
	return "stderr: " + s
}

// marshalResult is the server's result as JSON, for the MCP front-end.
func marshalResult(r *mcp.CallToolResult) (json.RawMessage, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding the server's result: %w", err)
	}
	return b, nil
}
