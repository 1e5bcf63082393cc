// Package health re-probes the backends of capabilities while a server
// runs (live health): every TTL it runs `TOOL check` of each backend again
// (for an MCP tool: its server starts and lists its locked tools), under
// its locked runtime, and keeps the results. Overlay gives a copy of
// the lock whose probe results and active backends are the live ones, so
// that a capability moves to the next locked backend whose check passes
// when its active one starts failing, and back when it recovers. It never
// adds a tool: only the lock's tools are checked or chosen, and a binary
// that changed since the lock is still refused by the launcher.
package health

import (
	"context"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/probe"
	"github.com/toolbox-dev/toolbox/runspec"
)

// DefaultCheckTimeout bounds one check.
const DefaultCheckTimeout = 30 * time.Second

// Config says what to watch.
type Config struct {
	LockPath  string
	Lock      *manifest.Lock
	CallerEnv []string
	// TTL is the time between two rounds of checks.
	TTL time.Duration
	// CheckTimeout bounds each check (0 = DefaultCheckTimeout).
	CheckTimeout time.Duration
	// Plugin checks plugin tools (pluginprobe.Check); nil leaves their
	// locked result in place.
	Plugin probe.PluginCheck
	// StateDir is the server's state directory ("" for none): checks, like
	// runs, may not reach it.
	StateDir string
	// Hidden are more paths checks may not reach (launcher.Request.Hidden).
	Hidden []string
	// Workspace is the server's workspace: checks run on it, as its calls
	// do (runspec.Trust.WithWorkspace).
	Workspace runspec.Workspace
	// MCP checks the MCP servers of MCP tools (mcprun.Check): ok when the
	// server starts, initializes and lists its locked tools; nil leaves
	// their locked result in place.
	MCP MCPCheck
}

// MCPCheck probes MCP server server of the lock at lockPath now, under its
// locked runtime (out of reach of the hidden paths: the state dir and
// Config.Hidden, as a call's server is; on workspace ws, as a run),
// without calling any tool.
type MCPCheck func(ctx context.Context, lockPath string, l *manifest.Lock, server string, callerEnv []string, hidden []string, ws runspec.Workspace, timeout time.Duration) manifest.Probe

// Monitor holds the live probe results. Its methods are safe for
// concurrent use.
type Monitor struct {
	cfg  Config
	mu   sync.Mutex
	live map[string]manifest.Probe
	// rounds counts completed rounds (tests and status output).
	rounds int
}

// New returns a Monitor; nothing runs until Round or Run.
func New(cfg Config) *Monitor {
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = DefaultCheckTimeout
	}
	return &Monitor{cfg: cfg, live: map[string]manifest.Probe{}}
}

// backends lists the tools worth re-checking: backends of capabilities
// that declare a check.
func (m *Monitor) backends() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range m.cfg.Lock.Capabilities {
		for _, b := range c.Backends {
			t := m.cfg.Lock.Tools[b]
			if t != nil && t.Kind == manifest.KindMCP && t.MCP != nil && m.cfg.MCP != nil && !seen[b] {
				seen[b] = true
				out = append(out, b)
				continue
			}
			if seen[b] || t == nil || t.Describe == nil || !t.Describe.Check {
				continue
			}
			if t.Kind == manifest.KindPlugin && m.cfg.Plugin == nil {
				continue
			}
			seen[b] = true
			out = append(out, b)
		}
	}
	return out
}

// Round runs every check once, in parallel, and records the results. The
// MCP tools of one server share one check of that server.
func (m *Monitor) Round(ctx context.Context) {
	dir := filepath.Dir(m.cfg.LockPath)
	hidden := append([]string{m.cfg.StateDir}, m.cfg.Hidden...)
	trust := runspec.NewTrust(m.cfg.LockPath, m.cfg.Lock, hidden...).WithWorkspace(m.cfg.Workspace)
	var wg sync.WaitGroup
	record := func(p manifest.Probe, names ...string) {
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		for _, n := range names {
			m.live[n] = p
		}
		m.mu.Unlock()
	}
	servers := map[string][]string{}
	for _, name := range m.backends() {
		t := m.cfg.Lock.Tools[name]
		if t.Kind == manifest.KindMCP {
			servers[t.MCP.Server] = append(servers[t.MCP.Server], name)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			record(probe.Check(ctx, dir, t, trust, m.cfg.Lock.EnvAllowlist, m.cfg.CallerEnv, m.cfg.CheckTimeout, m.cfg.Plugin), name)
		}()
	}
	for server, names := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			record(m.cfg.MCP(ctx, m.cfg.LockPath, m.cfg.Lock, server, m.cfg.CallerEnv, hidden, m.cfg.Workspace, m.cfg.CheckTimeout), names...)
		}()
	}
	wg.Wait()
	m.mu.Lock()
	m.rounds++
	m.mu.Unlock()
}

// Run runs a round every TTL until ctx ends, calling changed (when not
// nil) after a round that changed an active backend.
func (m *Monitor) Run(ctx context.Context, changed func(*manifest.Lock)) {
	if m.cfg.TTL <= 0 {
		return
	}
	tick := time.NewTicker(m.cfg.TTL)
	defer tick.Stop()
	before := actives(m.Overlay())
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m.Round(ctx)
		l := m.Overlay()
		if now := actives(l); !maps.Equal(now, before) {
			before = now
			if changed != nil {
				changed(l)
			}
		}
	}
}

func actives(l *manifest.Lock) map[string]string {
	out := map[string]string{}
	for n, c := range l.Capabilities {
		out[n] = c.Active
	}
	return out
}

// Live returns the live probe results by tool name (a copy).
func (m *Monitor) Live() map[string]manifest.Probe {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.live)
}

// Overlay returns a copy of the lock with the live probe results in place
// of the locked ones and every capability's active backend chosen again by
// the lock's rule: the first ok backend, else the first unverified, else
// none. Tools are shared with the lock except those whose probe changed.
func (m *Monitor) Overlay() *manifest.Lock {
	live := m.Live()
	l := *m.cfg.Lock
	l.Tools = maps.Clone(m.cfg.Lock.Tools)
	for name, p := range live {
		if t := l.Tools[name]; t != nil && t.Probe != p {
			c := *t
			c.Probe = p
			l.Tools[name] = &c
		}
	}
	l.Capabilities = make(map[string]*manifest.Capability, len(m.cfg.Lock.Capabilities))
	for name, c := range m.cfg.Lock.Capabilities {
		cc := *c
		cc.Active = ""
		if order := c.UsableBackends(l.Tools); len(order) > 0 {
			cc.Active = order[0]
		}
		l.Capabilities[name] = &cc
	}
	return &l
}
