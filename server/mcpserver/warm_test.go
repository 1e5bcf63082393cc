package mcpserver

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/internal/testplugin"
	"github.com/toolbox-dev/toolbox/manifest"
)

// connect opens one more client connection to e's server; it is closed at
// the end of the test unless the caller closes it first.
func (e *env) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(context.Background(), st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "second"}, nil).Connect(ctx(t), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-served
	})
	return cs
}

// probePid calls the probe plugin's "pid" action on cs.
func probePid(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"action": "pid"}})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, res)
	pid, err := strconv.Atoi(strings.TrimSpace(text(res)))
	if err != nil {
		t.Fatalf("pid call answered %q", text(res))
	}
	return pid
}

// A plugin over MCP is warm: one process serves every call of a
// connection; another connection gets its own (state never crosses
// sessions); a connection's end stops its process and leaves the other's.
func TestWarmPluginPerConnection(t *testing.T) {
	f := newFixture(t)
	testplugin.Add(t, f.Fixture, "probe", 0)
	e := f.start(t, nil)
	a := probePid(t, e.cs)
	if again := probePid(t, e.cs); again != a {
		t.Fatalf("second call served by pid %d, want the warm process %d", again, a)
	}
	other := e.connect(t)
	b := probePid(t, other)
	if b == a {
		t.Fatal("two connections share one plugin process")
	}
	_ = other.Close()
	testenv.Eventually(t, 10*time.Second, "the closed connection's plugin to end", func() bool { return !testplugin.Alive(b) })
	if !testplugin.Alive(a) || probePid(t, e.cs) != a {
		t.Fatal("closing one connection stopped another's plugin")
	}
	e.close()
	testenv.Eventually(t, 10*time.Second, "the last plugin to end with its connection", func() bool { return !testplugin.Alive(a) })
}

// Server.Close (toolbox serve's shutdown) stops every connection's
// plugins.
func TestWarmPluginsStopWithTheServer(t *testing.T) {
	f := newFixture(t)
	testplugin.Add(t, f.Fixture, "probe", 0)
	e := f.start(t, nil)
	pid := probePid(t, e.cs)
	e.srv.Close()
	if testplugin.Alive(pid) {
		t.Fatalf("plugin %d outlived the server", pid)
	}
}

// The server's call limit: never more tool calls run at once than
// MaxCalls; the others wait their turn and all succeed.
func TestMaxCallsQueuesCalls(t *testing.T) {
	f := newFixture(t)
	dir := f.Dir + "/inflight"
	// Each call leaves a file while it runs and records how many it saw.
	f.AddTool(t, "slow", fmt.Sprintf(`mkdir -p %[1]s; touch %[1]s/$$; ls %[1]s | wc -l >> %[1]s.seen; sleep 0.2; rm %[1]s/$$`, dir), nil)
	const limit, calls = 2, 8
	e := f.start(t, func(o *Options) { o.MaxCalls = limit })
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			res, err := e.cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "slow"})
			if err != nil || res.IsError {
				t.Errorf("call: %v, %v", err, res)
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(dir + ".seen")
	if err != nil {
		t.Fatal(err)
	}
	seen := strings.Fields(string(data))
	if len(seen) != calls {
		t.Fatalf("%d calls ran, want %d", len(seen), calls)
	}
	most := 0
	for _, s := range seen {
		n, _ := strconv.Atoi(s)
		most = max(most, n)
	}
	if most > limit {
		t.Fatalf("%d calls ran at once, more than the limit %d", most, limit)
	}
	t.Logf("at most %d calls at once (limit %d)", most, limit)
}

// The lock is re-read when `toolbox lock` replaced it: a tool whose binary
// changed and was locked again is served without a restart. A new lock
// with other tools is not taken (the client's tool list cannot change
// under it): the one read before stays.
func TestLockReReadOnChange(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "hello", "echo one", nil)
	if err := manifest.Write(f.LockPath, f.Lock); err != nil {
		t.Fatal(err)
	}
	onDisk, err := manifest.Read(f.LockPath)
	if err != nil {
		t.Fatal(err)
	}
	e := f.start(t, func(o *Options) { o.Lock = onDisk }) // f.Lock changes below
	if got := strings.TrimSpace(text(e.call("hello", nil))); got != "one" {
		t.Fatalf("first call: %q", got)
	}
	// A new build of the tool, locked again.
	f.AddTool(t, "hello", "echo two", nil)
	time.Sleep(10 * time.Millisecond) // a new mtime on coarse file systems
	if err := manifest.Write(f.LockPath, f.Lock); err != nil {
		t.Fatal(err)
	}
	res := e.call("hello", nil)
	wantOK(t, res)
	if got := strings.TrimSpace(text(res)); got != "two" {
		t.Fatalf("after relocking: %q, want the new build's output", got)
	}
	// A lock with another tool list is not taken.
	f.AddTool(t, "extra", "echo extra", nil)
	f.AddTool(t, "hello", "echo three", nil)
	time.Sleep(10 * time.Millisecond)
	if err := manifest.Write(f.LockPath, f.Lock); err != nil {
		t.Fatal(err)
	}
	if fl := wantFailure(t, e.call("hello", nil)); !strings.Contains(fl.Error, "changed") {
		t.Fatalf("with a lock of other tools: %+v, want the old lock's refusal of the changed binary", fl)
	}
}
