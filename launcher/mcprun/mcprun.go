// Package mcprun calls the tools of locked MCP servers for the launcher:
// it implements launcher.MCPRunner with the MCP client of package
// mcpbackend. It is a package of its own so that the launcher does not
// link the MCP SDK: only toolbox-core and the servers import it.
//
// Two runners share one rule, every call re-verifies: before a call the
// server's tools/list must equal the lock's pins (mcpbackend.Pin), else
// the call is refused with the tool and the field that changed.
//
//   - Runner starts the server for each call and stops it after
//     (`toolbox run`).
//   - Pool keeps one server per owner (an MCP connection's session),
//     server and workspace warm (`toolbox mcp`, `toolbox serve`) in a
//     launcher/warm pool, the one pool of warm processes (DESIGN.md §5):
//     it restarts one that died with back-off, re-verifies on the server's
//     notifications/tools/list_changed, and stops an owner's servers with
//     CloseOwner. A server that once listed anything but its pins is
//     refused for the rest of its owner's life (warm.Owner.Refuse): it
//     changed under a running session, which a restart would only hide.
package mcprun

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/warm"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/mcpbackend"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Runner is the launcher.MCPRunner of `toolbox run`: one server process
// per call. The zero value uses mcpbackend.DefaultStartTimeout.
type Runner struct {
	// Launch tunes how servers are started (StartTimeout); its Server,
	// Spec and Command are set per call.
	Launch mcpbackend.Launch
}

var _ launcher.MCPRunner = Runner{}

// CallMCP starts the server, verifies its listing, calls the tool and
// stops the server. A start failure or a listing that differs from the
// lock is returned with started false (a *launcher.RefusedError).
func (r Runner) CallMCP(ctx context.Context, call launcher.MCPCall) (*launcher.MCPResult, bool, error) {
	s, err := start(ctx, r.Launch, call, nil)
	if err != nil {
		return nil, false, err
	}
	defer s.Close()
	if err := verify(ctx, s, call); err != nil {
		return nil, false, err
	}
	return callTool(ctx, s, call)
}

// start starts call's server as the lock says, confined by runspec, or
// connects to it when it is reached by URL. A start refused before any
// process existed (the executable no longer matches the lock, the sandbox
// cannot be prepared) is marked warm.Unstarted: it is no failure of the
// server and starts no back-off, so every call gets the refusal at once.
func start(ctx context.Context, l mcpbackend.Launch, call launcher.MCPCall, onChange func()) (*mcpbackend.Session, error) {
	if srv := call.Lock.MCPServers[call.Server]; srv != nil && srv.URL != "" {
		token, err := runspec.MCPToken(filepath.Dir(call.LockPath), call.Lock, call.Server)
		if err != nil {
			return nil, &launcher.RefusedError{What: err.Error(), Fix: "put the token in the server's envdir", Err: err}
		}
		s, err := mcpbackend.Dial(ctx, mcpbackend.Remote{Server: call.Server, URL: srv.URL, Token: token, StartTimeout: l.StartTimeout, OnListChanged: onChange})
		if err != nil {
			return nil, &launcher.RefusedError{What: err.Error(), Fix: "check that the server runs; `toolbox check --probe` reaches it as a call would", Err: err}
		}
		return s, nil
	}
	// The executable is opened and hashed once, and started from that
	// descriptor (launcher.OpenMCPServer): at every start, warm or not.
	exe, err := launcher.OpenMCPServer(call.LockPath, call.Lock, call.Server)
	if err != nil {
		return nil, warm.Unstarted(err)
	}
	defer exe.Close()
	if afterOpen != nil {
		afterOpen(exe.Path())
	}
	trust := runspec.NewTrust(call.LockPath, call.Lock, append([]string{call.StateDir}, call.Hidden...)...).WithWorkspace(call.Workspace)
	spec, cmd, err := runspec.MCPServer(filepath.Dir(call.LockPath), call.Lock, call.Server, call.CallerEnv, call.Session, trust)
	if err != nil {
		var r *sandbox.RefusalError
		if errors.As(err, &r) {
			return nil, warm.Unstarted(&launcher.RefusedError{What: err.Error(), Fix: r.Fix, Err: err})
		}
		return nil, warm.Unstarted(&launcher.RefusedError{What: err.Error(), Fix: "run `toolbox lock`", Err: err})
	}
	cmd.Exe = exe
	l.Server, l.Spec, l.Command, l.OnListChanged = call.Server, spec, cmd, onChange
	s, err := mcpbackend.Start(ctx, l)
	if err != nil {
		err = call.Redactor.Error(err) // its stderr may echo a secret
		fix := "run `toolbox check --probe` to see why the server does not start"
		var r *sandbox.RefusalError
		if errors.As(err, &r) {
			fix = r.Fix
		}
		return nil, &launcher.RefusedError{What: err.Error(), Fix: fix, Err: err}
	}
	return s, nil
}

// afterOpen, when set (by tests), runs between the check of a server's
// executable and its start.
var afterOpen func(path string)

// verify compares the server's listing with the lock's pins.
func verify(ctx context.Context, s *mcpbackend.Session, call launcher.MCPCall) error {
	pin, err := mcpbackend.PinOf(call.Lock, call.Server)
	if err != nil {
		return &launcher.RefusedError{What: err.Error(), Fix: "run `toolbox lock`", Err: err}
	}
	err = s.Verify(ctx, pin)
	var de *mcpbackend.DriftError
	switch {
	case errors.As(err, &de):
		return &launcher.RefusedError{What: de.Error(), Fix: mcpbackend.DriftFix, Err: de}
	case err != nil:
		return &launcher.RefusedError{What: err.Error(), Fix: "run `toolbox check --probe` to see the server's state", Err: err}
	}
	return nil
}

// callTool calls the tool and reads the answer; a failed request is
// reported as started (the server was asked).
func callTool(ctx context.Context, s *mcpbackend.Session, call launcher.MCPCall) (*launcher.MCPResult, bool, error) {
	res, err := s.Call(ctx, call.Tool, call.Args)
	if err != nil {
		return nil, true, err
	}
	raw, err := marshalResult(res)
	if err != nil {
		return nil, true, err
	}
	return &launcher.MCPResult{Text: mcpbackend.Text(res), IsError: res.IsError, Result: raw}, true, nil
}

// Check probes a locked MCP server now (health.MCPCheck, `--recheck`):
// ok when it starts under its locked runtime, out of reach of hidden (the
// state dir and the front-end's hidden paths, as a call's server), on
// workspace ws, initializes and lists exactly its locked tools; failed,
// with the reason and the fix, when it does not. No tool is called.
func Check(ctx context.Context, lockPath string, l *manifest.Lock, server string, callerEnv []string, hidden []string, ws runspec.Workspace, timeout time.Duration) manifest.Probe {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	red := launcher.NewRedactor(launcher.MCPSecrets(lockPath, l, server))
	call := launcher.MCPCall{LockPath: lockPath, Lock: l, Server: server, CallerEnv: callerEnv, Hidden: hidden, Workspace: ws, Redactor: red}
	s, err := start(ctx, mcpbackend.Launch{StartTimeout: timeout}, call, nil)
	if err == nil {
		defer s.Close()
		err = verify(ctx, s, call)
	}
	if err != nil {
		// A server that died during the listing: its stderr is quoted.
		var re *launcher.RefusedError
		if errors.As(err, &re) {
			return manifest.Probe{Status: manifest.StatusFailed, Detail: red.String(re.What), Fix: re.Fix}
		}
		return manifest.Probe{Status: manifest.StatusFailed, Detail: red.String(err.Error())}
	}
	info := s.Info()
	return manifest.Probe{Status: manifest.StatusOK, Detail: fmt.Sprintf("mcp server %q (%s %s) lists its locked tools", server, info.Name, info.Version)}
}
