package mcprun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/warm"
	"github.com/toolbox-dev/toolbox/manifest"
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
// serve`): one warm server per owner (launcher.MCPCall.Session), server
// and workspace (a server's grants may name it), started at the owner's
// first call of it. The servers are kept in a launcher/warm pool, on
// demand (warm.Options.OnDemand): a server that died is started again by
// the next call, within the back-off. See the package doc. Its methods
// are safe for concurrent use; the zero value is not: use NewPool.
type Pool struct {
	launch mcpbackend.Launch
	logf   func(format string, args ...any)
	now    func() time.Time // the back-off's clock (tests replace it)
	warm   *warm.Pool[*mcpbackend.Session]

	mu     sync.Mutex
	owners map[string]*owner
	closed bool
}

// owner is one session's servers: its warm owner, and which of its
// servers listed their pins once (so drift found later is a change
// during the session).
type owner struct {
	*warm.Owner[*mcpbackend.Session]
	mu       sync.Mutex
	verified map[string]bool
}

// NewPool returns an empty pool. launch tunes how servers start
// (StartTimeout); logf, when not nil, is told of restarts and of drift
// found by a tools/list_changed check.
func NewPool(launch mcpbackend.Launch, logf func(format string, args ...any)) *Pool {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	p := &Pool{launch: launch, logf: logf, now: time.Now, owners: map[string]*owner{}}
	p.warm = warm.New[*mcpbackend.Session](warm.Options{
		OnDemand:    true,
		Backoff:     backoff,
		StableAfter: -1, // a call that succeeds resets the count (Lease.Served)
		Now:         func() time.Time { return p.now() },
	})
	return p
}

var _ launcher.MCPRunner = (*Pool)(nil)

// key names an owner's server on one workspace in its warm owner.
func key(call launcher.MCPCall) string {
	b, _ := json.Marshal([]string{call.Server, call.Workspace.Dir, string(call.Workspace.From)})
	return string(b)
}

// CallMCP calls the tool on the owner's warm server, starting it when
// needed (within the back-off), after verifying its listing. A server
// that dies during a call fails that call; the next one starts it again.
// A call that times out, is cancelled or is refused as a request retires
// the server (warm.Lease.Retire): the next call gets a fresh one.
func (p *Pool) CallMCP(ctx context.Context, call launcher.MCPCall) (*launcher.MCPResult, bool, error) {
	o, err := p.owner(call.Session)
	if err != nil {
		return nil, false, err
	}
	k := key(call)
	lease, err := o.Acquire(ctx, k, p.spec(o, k, call))
	if err != nil {
		return nil, false, p.acquireError(call, err)
	}
	s := lease.Instance()
	if err := verify(ctx, s, call); err != nil {
		var re *launcher.RefusedError
		var de *mcpbackend.DriftError
		if errors.As(err, &re) && errors.As(err, &de) {
			lease.Release()
			if o.Refuse(k, err) && o.wasVerified(k) {
				p.logf("mcp server %q (session %s) changed its tools during the session; its calls are refused: %v", call.Server, call.Session, call.Redactor.Error(de))
			}
		} else if d := o.Refusal(k); d != nil {
			// Its tools/list_changed check refused the server, and
			// closed the session under this call's listing.
			lease.Release()
			return nil, false, d
		} else {
			lease.Fail(err)
		}
		return nil, false, err
	}
	o.mu.Lock()
	o.verified[k] = true
	o.mu.Unlock()
	res, started, err := callTool(ctx, s, call)
	switch {
	case err != nil && s.Broken(err):
		lease.Fail(err)
	case err != nil:
		// Timed out, cancelled, or refused as a request: the server may
		// still be busy with it (a server is free to ignore the
		// cancellation) or broken. As a plugin's, it gets no new call
		// and ends once its other calls have.
		lease.Retire()
	default:
		lease.Served()
	}
	return res, started, err
}

// spec says how the owner's server of call starts, and logs its end and
// its restarts in the call's words (its stderr redacted).
func (p *Pool) spec(o *owner, k string, call launcher.MCPCall) warm.Spec[*mcpbackend.Session] {
	return warm.Spec[*mcpbackend.Session]{
		Config: config(call),
		Limit:  math.MaxInt32, // the session serves concurrent requests
		Start: func(ctx context.Context) (*mcpbackend.Session, error) {
			// A tools/list_changed re-verifies the session it came from;
			// one sent during the start waits for it.
			var mu sync.Mutex
			var started *mcpbackend.Session
			mu.Lock()
			defer mu.Unlock()
			s, err := start(ctx, p.launch, call, func() {
				mu.Lock()
				s := started
				mu.Unlock()
				if s != nil {
					p.listChanged(o, k, s, call)
				}
			})
			started = s
			return s, err
		},
		Ended: func(s *mcpbackend.Session) {
			p.logf("mcp server %q (session %s) ended: %s", call.Server, call.Session, orNone(call.Redactor.String(s.Stderr())))
		},
		Restarted: func(_ *mcpbackend.Session, failures int) {
			p.logf("mcp server %q (session %s) restarted after %d failures", call.Server, call.Session, failures)
		},
	}
}

// config identifies everything the server of call is started with, as
// the lock and the call say it (warm.Spec.Config): its locked entry
// (executable, hashes, arguments, environment, envdir, mechanism,
// sandbox, resolved paths, limits), the pinned bubblewrap, the allowlist
// and shared tmp size, what the call's trust protects and hides, the
// values of its envdir and the caller's environment (but the per-call
// AGENT_TURN_ID). A relock or an envdir edit that changes any of them
// retires a warm server started the old way: it would otherwise serve on
// under a confinement the lock no longer says.
func config(call launcher.MCPCall) string {
	l := call.Lock
	srv := l.MCPServers[call.Server]
	var envdir map[string]*string
	var envdirErr string
	if srv != nil && srv.Envdir != "" {
		dir := filepath.FromSlash(srv.Envdir)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(call.LockPath), dir)
		}
		var err error
		if envdir, err = runspec.ReadEnvdir(dir); err != nil {
			envdirErr = err.Error()
		}
	}
	trust := runspec.NewTrust(call.LockPath, l, append([]string{call.StateDir}, call.Hidden...)...)
	env := slices.DeleteFunc(slices.Clone(call.CallerEnv), func(kv string) bool { return strings.HasPrefix(kv, runspec.AgentTurnID+"=") })
	b, _ := json.Marshal(struct {
		Server            *manifest.MCPServer
		Bwrap             *manifest.Pin
		Allowlist         []string
		SharedTmp         uint64
		Protected, Hidden []string
		Envdir            map[string]*string
		EnvdirErr         string
		CallerEnv         []string
	}{srv, l.Bwrap, l.EnvAllowlist, l.SharedTmpBytes(), trust.Protected, trust.Hidden, envdir, envdirErr, env})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// acquireError is the refusal of a call that got no server.
func (p *Pool) acquireError(call launcher.MCPCall, err error) error {
	var be *warm.BackoffError
	switch {
	case errors.Is(err, warm.ErrClosed):
		return &launcher.RefusedError{What: fmt.Sprintf("mcp server %q: its session is closing", call.Server), Fix: "call again from a new session"}
	case errors.As(err, &be):
		last := be.Err
		if errors.Is(last, warm.ErrEnded) {
			last = errors.New("the server exited")
		}
		return &launcher.RefusedError{
			What: fmt.Sprintf("mcp server %q failed %d times in a row (last: %v); the next start is in %s", call.Server, be.Failures, last, be.Wait.Round(100*time.Millisecond)),
			Fix:  "run `toolbox check --probe` to see why the server does not start",
		}
	}
	return err
}

// wasVerified says whether a session of k listed its pins once.
func (o *owner) wasVerified(k string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.verified[k]
}

// owner returns the warm owner of session, creating it.
func (p *Pool) owner(session string) (*owner, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		if o := p.owners[session]; o != nil {
			return o, nil
		}
		if wo, err := p.warm.NewOwner(session); err == nil {
			o := &owner{Owner: wo, verified: map[string]bool{}}
			p.owners[session] = o
			return o, nil
		}
	}
	return nil, &launcher.RefusedError{What: "the MCP server pool is closed", Fix: "start toolbox again"}
}

// listChanged re-verifies s when its server says its tools changed;
// drift refuses the server for the rest of the owner's life.
func (p *Pool) listChanged(o *owner, k string, s *mcpbackend.Session, call launcher.MCPCall) {
	ctx, cancel := context.WithTimeout(context.Background(), listChangedTimeout)
	defer cancel()
	if err := verify(ctx, s, call); err != nil {
		var de *mcpbackend.DriftError
		if errors.As(err, &de) && o.Refuse(k, err) && o.wasVerified(k) {
			p.logf("mcp server %q (session %s) changed its tools during the session (tools/list_changed); its calls are refused: %v", call.Server, call.Session, call.Redactor.Error(de))
		}
	}
}

// CloseOwner stops every server of owner and forgets them; a later call
// of that owner starts afresh.
func (p *Pool) CloseOwner(session string) {
	p.mu.Lock()
	o := p.owners[session]
	delete(p.owners, session)
	p.mu.Unlock()
	if o != nil {
		o.Close()
	}
}

// Close stops every server and refuses later calls.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.owners = map[string]*owner{}
	p.mu.Unlock()
	p.warm.Close()
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
