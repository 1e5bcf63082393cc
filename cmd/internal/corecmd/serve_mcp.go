package corecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/toolbox-dev/toolbox/launcher/health"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/probe/pluginprobe"
	"github.com/toolbox-dev/toolbox/server/mcpserver"
)

// MCPSocketName is the unix socket of --mcp-unix in the state dir.
const MCPSocketName = "mcp.sock"

// serveMCPHTTP serves MCP over streamable HTTP beside the daemon, sharing
// its supervisor (each MCP connection is its own session). Addresses must be
// loopback: the server runs tools as the daemon's user and has no
// authentication of its own. It returns a function that stops the listeners.
func serveMCPHTTP(ctx context.Context, opts *ServeOptions, stateDir, lockPath string, l *manifest.Lock, sup *supervisor.Supervisor, logf func(string, ...any)) (func(), error) {
	logger := slog.New(slog.NewTextHandler(opts.IO.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := mcpserver.New(mcpserver.Options{LockPath: lockPath, Lock: l, Supervisor: sup, CallerEnv: os.Environ(), Logger: logger, Version: buildVersion(), StateDir: stateDir})
	if err != nil {
		return nil, fmt.Errorf("%w; run `toolbox lock`", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler(nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	var listeners []net.Listener
	if opts.MCPHTTP != "" {
		host, _, err := net.SplitHostPort(opts.MCPHTTP)
		if err != nil {
			return nil, fmt.Errorf("--mcp-http %q: %w; write 127.0.0.1:PORT", opts.MCPHTTP, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("--mcp-http %q: only loopback addresses are served (127.0.0.1, ::1, localhost); the MCP server has no authentication", opts.MCPHTTP)
		}
		ln, err := net.Listen("tcp", opts.MCPHTTP)
		if err != nil {
			return nil, fmt.Errorf("--mcp-http: %w", err)
		}
		listeners = append(listeners, ln)
		logf("serving MCP over HTTP on http://%s/mcp", ln.Addr())
	}
	if opts.MCPUnix {
		path := filepath.Join(stateDir, MCPSocketName)
		_ = os.Remove(path) // the daemon's flock says no other daemon owns this state dir
		ln, err := net.Listen("unix", path)
		if err != nil {
			closeAll(listeners)
			return nil, fmt.Errorf("--mcp-unix: %w", err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			ln.Close()
			closeAll(listeners)
			return nil, fmt.Errorf("--mcp-unix: %w", err)
		}
		listeners = append(listeners, ln)
		logf("serving MCP over HTTP on unix socket %s (path /mcp)", path)
	}
	for _, ln := range listeners {
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logf("MCP over HTTP: %v", err)
			}
		}()
	}
	if opts.Recheck > 0 {
		m := health.New(health.Config{LockPath: lockPath, Lock: l, CallerEnv: os.Environ(), TTL: opts.Recheck, Plugin: pluginprobe.Check, StateDir: stateDir})
		go m.Run(ctx, func(live *manifest.Lock) {
			logf("live health: capability backends changed")
			srv.SetLock(live)
		})
	}
	return func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(c)
		srv.Close()
	}, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}
