package corecmd

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// TestServeMCPUnix: serve --mcp-unix also serves MCP over streamable HTTP
// on <state dir>/mcp.sock (mode 0600); a client there lists the tools and
// runs a background command through the shared supervisor. A state dir
// whose mcp.sock is longer than a sockaddr_un holds (108 bytes) works as
// serve.sock does there, and the socket is removed when serve stops.
func TestServeMCPUnix(t *testing.T) {
	for _, long := range []bool{false, true} {
		t.Run(map[bool]string{false: "short", true: "long-state-dir"}[long], func(t *testing.T) {
			testServeMCPUnix(t, long)
		})
	}
}

func testServeMCPUnix(t *testing.T, long bool) {
	g, errb := serveGlobals(t, true)
	if long {
		g.StateDir = filepath.Join(g.StateDir, strings.Repeat("s", 110))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := &ServeOptions{Globals: g, MCPUnix: true, Signals: func(context.Context) (context.Context, context.CancelFunc) {
		return ctx, func() {}
	}}
	done := make(chan error, 1)
	go func() { done <- serveRun(context.Background(), opts) }()
	sock := filepath.Join(g.StateDir, MCPSocketName)
	fi := waitMCPSocket(t, sock, done, errb)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mcp.sock mode %v, want 0600", fi.Mode().Perm())
	}
	hc := unixHTTPClient(sock)
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://toolbox/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting: %v (stderr %q)", err, errb.String())
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names["process_run"] || !names["processes"] {
		t.Fatalf("tools over HTTP: %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "process_run", Arguments: map[string]any{"command": "echo over-http", "wait_seconds": 5}})
	if err != nil || res.IsError {
		t.Fatalf("process_run: %+v, %v", res, err)
	}
	cs.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit")
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", sock, err)
	}
}

// waitMCPSocket waits for serve's mcp.sock at sock and returns its
// FileInfo. It fails at once, with serve's error and stderr, when serve
// (running until it sends on done) exits first, and after 10 s otherwise.
func waitMCPSocket(t *testing.T, sock string, done <-chan error, errb *lockedBuffer) os.FileInfo {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if fi, err := os.Stat(sock); err == nil {
			return fi
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited before %s appeared: %v (stderr %q)", sock, err, errb.String())
		case <-deadline:
			t.Fatalf("no %s after 10s (stderr %q)", sock, errb.String())
		case <-tick.C:
		}
	}
}

// unixHTTPClient is an HTTP client of the server on the unix socket sock,
// reached as toolbox reaches a path too long for a sockaddr_un.
func unixHTTPClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		addr, closeDir, err := wire.UnixPath(sock)
		if err != nil {
			return nil, err
		}
		defer closeDir()
		return (&net.Dialer{}).DialContext(ctx, "unix", addr)
	}}}
}

// TestServeMCPHTTPLoopbackOnly: a non-loopback --mcp-http is refused.
func TestServeMCPHTTPLoopbackOnly(t *testing.T) {
	g, _ := serveGlobals(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := &ServeOptions{Globals: g, MCPHTTP: "0.0.0.0:0", Signals: func(context.Context) (context.Context, context.CancelFunc) { return ctx, func() {} }}
	err := serveRun(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "only loopback addresses are served") {
		t.Fatalf("serve --mcp-http 0.0.0.0:0: %v", err)
	}
}
