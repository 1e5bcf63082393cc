package corecmd

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeMCPUnix: serve --mcp-unix also serves MCP over streamable HTTP
// on <state dir>/mcp.sock (mode 0600); a client there lists the tools and
// runs a background command through the shared supervisor.
func TestServeMCPUnix(t *testing.T) {
	g, errb := serveGlobals(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := &ServeOptions{Globals: g, MCPUnix: true, Signals: func(context.Context) (context.Context, context.CancelFunc) {
		return ctx, func() {}
	}}
	done := make(chan error, 1)
	go func() { done <- serveRun(context.Background(), opts) }()
	sock := filepath.Join(g.StateDir, MCPSocketName)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fi, err := os.Stat(sock); err == nil {
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mcp.sock mode %v, want 0600", fi.Mode().Perm())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s (stderr %q)", sock, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
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
