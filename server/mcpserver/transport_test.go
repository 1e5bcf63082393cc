package mcpserver

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// TestHTTPHandler: the streamable HTTP handler serves the same tools, a
// service lives as long as its HTTP session, and the session's end stops
// it.
func TestHTTPHandler(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", `echo "hello $2"`, v1("echo", arg("who", "single")))
	f.AddTool(t, "watch", serviceScript, serviceDescribe("watch"))
	sup := newSupervisor(t, f)
	srv, err := New(Options{LockPath: f.LockPath, Lock: f.Lock, Supervisor: sup, CallerEnv: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler(nil))
	defer hs.Close()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"who": "ann"}})
	if err != nil || res.IsError || text(res) != "hello ann\n" {
		t.Fatalf("echo over HTTP: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "watch"})
	if err != nil || res.IsError {
		t.Fatalf("starting watch over HTTP: %v %+v", err, res)
	}
	var st Started
	decode(t, res, &st)
	// A second request of the same session sees the process.
	res, err = cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "watch_send", Arguments: map[string]any{"process": st.Process, "event": map[string]any{"op": "x"}}})
	if err != nil || res.IsError {
		t.Fatalf("send over HTTP: %v %s", err, text(res))
	}
	data, err := os.ReadFile(filepath.Join(f.Dir, "service.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the service to stop with its HTTP session", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}
