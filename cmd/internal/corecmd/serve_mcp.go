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

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/launcher/health"
	"github.com/toolbox-dev/toolbox/launcher/mcprun"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/probe/pluginprobe"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
	"github.com/toolbox-dev/toolbox/server/mcpserver"
)

// MCPSocketName is the unix socket of --mcp-unix in the state dir.
const MCPSocketName = "mcp.sock"

// httpDrain is how long answers already being written get at exit, once
// every call was cancelled and has returned.
const httpDrain = 250 * time.Millisecond

// serveMCPHTTP serves MCP over streamable HTTP beside the daemon, sharing
// its supervisor (each MCP connection is its own session). The TCP address
// must be loopback and every request on it must carry the bearer token
// (--mcp-token-file, else <state dir>/mcp.token); the unix socket serves
// this uid only. Both refuse a foreign Origin (mcpserver.HTTPGuard). It
// returns a function that stops the listeners.
func serveMCPHTTP(ctx context.Context, opts *ServeOptions, stateDir, lockPath string, l *manifest.Lock, sup *supervisor.Supervisor, ws runspec.Workspace, logf func(string, ...any)) (func(), error) {
	for _, o := range opts.MCPAllowOrigins {
		if _, err := mcpserver.NormalizeOrigin(o); err != nil {
			return nil, &cli.UsageError{Err: fmt.Errorf("--mcp-allow-origin: %w", err)}
		}
	}
	logger := slog.New(slog.NewTextHandler(opts.IO.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := mcpserver.New(mcpserver.Options{LockPath: lockPath, Lock: l, Supervisor: sup, CallerEnv: os.Environ(), Logger: logger, Version: cli.Version(), StateDir: stateDir, Hidden: serveHidden(opts), MaxCalls: opts.MaxCalls, Workspace: ws})
	if err != nil {
		return nil, fmt.Errorf("%w; run `toolbox lock`", err)
	}
	mcpHandler := srv.Handler(nil)
	var servers []*http.Server
	serve := func(ln net.Listener, guard mcpserver.HTTPGuard) {
		mux := http.NewServeMux()
		mux.Handle("/mcp", guard.Wrap(mcpHandler))
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnContext: mcpserver.ConnContext}
		servers = append(servers, hs)
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logf("MCP over HTTP: %v", err)
			}
		}()
	}
	shutdown := func() {
		// Cancel the calls in flight and stop the sessions' processes
		// first: the HTTP server's shutdown waits for its handlers. Then
		// the answers in flight get a moment to leave; a client's stream
		// of notifications (a GET that never idles) is cut.
		srv.Close()
		c, cancel := context.WithTimeout(context.Background(), httpDrain)
		defer cancel()
		for _, hs := range servers {
			if hs.Shutdown(c) != nil {
				_ = hs.Close()
			}
		}
	}
	if opts.MCPHTTP != "" {
		host, _, err := net.SplitHostPort(opts.MCPHTTP)
		if err != nil {
			shutdown()
			return nil, fmt.Errorf("--mcp-http %q: %w; write 127.0.0.1:PORT", opts.MCPHTTP, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			shutdown()
			return nil, fmt.Errorf("--mcp-http %q: only loopback addresses are served (127.0.0.1, ::1, localhost): put a TLS proxy in front to reach it from elsewhere", opts.MCPHTTP)
		}
		token, tokenPath, err := mcpToken(opts.MCPTokenFile, stateDir, logf)
		if err != nil {
			shutdown()
			return nil, err
		}
		ln, err := net.Listen("tcp", opts.MCPHTTP)
		if err != nil {
			shutdown()
			return nil, fmt.Errorf("--mcp-http: %w", err)
		}
		origins := append(mcpserver.OwnOrigins(opts.MCPHTTP, ln.Addr()), opts.MCPAllowOrigins...)
		serve(ln, mcpserver.HTTPGuard{Token: token, Origins: origins})
		logf("serving MCP over HTTP on http://%s/mcp; clients send Authorization: Bearer <the token in %s>", ln.Addr(), tokenPath)
	}
	if opts.MCPUnix {
		path := filepath.Join(stateDir, MCPSocketName)
		_ = os.Remove(path) // the daemon's flock says no other daemon owns this state dir
		// wire.Listen reaches a path too long for a sockaddr_un through
		// its directory, as serve.sock is reached.
		ln, fi, err := wire.Listen(path)
		if err != nil {
			shutdown()
			return nil, fmt.Errorf("--mcp-unix: %w", err)
		}
		stopHTTP := shutdown
		shutdown = func() {
			stopHTTP()
			if now, err := os.Lstat(path); err == nil && os.SameFile(now, fi) {
				os.Remove(path)
			}
		}
		uid := os.Getuid()
		serve(ln, mcpserver.HTTPGuard{Origins: opts.MCPAllowOrigins, PeerUID: &uid})
		logf("serving MCP over HTTP on unix socket %s (path /mcp; uid %d only)", path, uid)
	}
	if opts.Recheck > 0 {
		m := health.New(health.Config{LockPath: lockPath, Lock: l, CallerEnv: os.Environ(), TTL: opts.Recheck, Plugin: pluginprobe.Check, StateDir: stateDir, Hidden: serveHidden(opts), Workspace: ws, MCP: mcprun.Check})
		go m.Run(ctx, func(live *manifest.Lock) {
			logf("live health: capability backends changed")
			srv.SetLock(live)
		})
	}
	return shutdown, nil
}

// serveHidden are the paths serve hides from every tool besides the state
// dir: the operator's --mcp-token-file (the default token file is inside
// the state dir). A tool that read it could call the server, whose
// builtin "process" need not be confined as the tool is.
func serveHidden(opts *ServeOptions) []string {
	if opts.MCPTokenFile == "" {
		return nil
	}
	abs, err := filepath.Abs(opts.MCPTokenFile)
	if err != nil {
		return nil
	}
	return []string{abs}
}

// mcpToken is the bearer token of --mcp-http and the file it is in: the
// operator's --mcp-token-file, else <state dir>/mcp.token (made when
// missing).
func mcpToken(file, stateDir string, logf func(string, ...any)) (token, path string, err error) {
	if file != "" {
		token, err := mcpserver.ReadTokenFile(file)
		return token, file, err
	}
	path = filepath.Join(stateDir, mcpserver.TokenFileName)
	token, created, err := mcpserver.EnsureTokenFile(path)
	if err != nil {
		return "", "", err
	}
	if created {
		logf("created the MCP token file %s (mode 0600)", path)
	}
	return token, path, nil
}
