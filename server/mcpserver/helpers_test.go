package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/internal/testplugin"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init() // the landlock helper re-executes the binary that runs tools
	testplugin.Main()
	os.Exit(testenv.RunWithTmp(m))
}

// fixture is a locktest.Fixture: toolbox.hcl, /bin/sh tools under tools/
// (AddTool) and a hand-built lock whose paths are relative to Dir.
type fixture struct{ *locktest.Fixture }

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return &fixture{locktest.New(t, "sandbox = \"none\"\n")}
}

// v1 is a v1 describe document with args.
func v1(name string, args ...protocol.Arg) *protocol.Describe {
	if args == nil {
		args = []protocol.Arg{}
	}
	return &protocol.Describe{Slug: name, Description: "test tool " + name, Args: args}
}

// v2 is a v2 describe document of the given process.
func v2(name string, p *protocol.Process, args ...protocol.Arg) *protocol.Describe {
	d := v1(name, args...)
	d.Protocol, d.Process = 2, p
	return d
}

func arg(name, arity string) protocol.Arg {
	return protocol.Arg{Name: name, Description: "the " + name, Type: "string", BackingType: "string", Arity: arity, Mode: protocol.ModePositional}
}

// serviceDescribe is an echo service: ready on "ready", reads jsonl events
// {"op": string}, answers each with {"got": EVENT}.
func serviceDescribe(name string) *protocol.Describe {
	return v2(name, &protocol.Process{
		Mode:   protocol.ProcessService,
		Output: &protocol.Output{Framing: protocol.FramingJSONL, Event: json.RawMessage(`{"type":"object","required":["got"]}`)},
		Input:  &protocol.Input{Framing: protocol.FramingJSONL, Event: json.RawMessage(`{"type":"object","properties":{"op":{"type":"string"}},"required":["op"],"additionalProperties":false}`)},
		Ready:  &protocol.Ready{Kind: "line", Match: "^ready$"},
	})
}

const serviceScript = `echo "$$" > "$(dirname "$0")/../service.pid"
echo ready
while read -r line; do echo "{\"got\": $line}"; done`

// env is a running server with a connected SDK client.
type env struct {
	t      *testing.T
	sup    *supervisor.Supervisor
	srv    *Server
	cs     *mcp.ClientSession
	served chan error

	mu       sync.Mutex
	progress []string
	logs     []any
	updates  int
}

// newSupervisor is a supervisor of f's lock with short timings, closed at
// the end of the test.
func newSupervisor(t *testing.T, f *fixture) *supervisor.Supervisor {
	t.Helper()
	sup, err := supervisor.New(supervisor.Config{
		Lock: f.Lock, LockPath: f.LockPath, CallerEnv: os.Environ(), CompileSchema: compileSupervisor,
		Timing: supervisor.Timing{StartTimeout: 5 * time.Second, StopGrace: 2 * time.Second, SendQuiet: 150 * time.Millisecond, RoundGap: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sup.Close(c); err != nil {
			t.Errorf("closing the supervisor: %v", err)
		}
	})
	return sup
}

// start builds the server of f's lock and connects a client in memory.
func (f *fixture) start(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	sup := newSupervisor(t, f)
	opts := Options{LockPath: f.LockPath, Lock: f.Lock, Supervisor: sup, CallerEnv: os.Environ()}
	if mod != nil {
		mod(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, sup: sup, srv: srv, served: make(chan error, 1)}
	st, ct := mcp.NewInMemoryTransports()
	go func() { e.served <- srv.Serve(context.Background(), st) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			e.mu.Lock()
			e.progress = append(e.progress, r.Params.Message)
			e.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			e.mu.Lock()
			e.logs = append(e.logs, r.Params.Data)
			e.mu.Unlock()
		},
		ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {
			e.mu.Lock()
			e.updates++
			e.mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx(t), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.cs = cs
	t.Cleanup(e.close) // before the supervisor's: cleanups run last first
	return e
}

// close ends the client's connection and waits for Serve to return.
func (e *env) close() {
	if e.cs == nil {
		return
	}
	_ = e.cs.Close()
	e.cs = nil
	select {
	case err := <-e.served:
		if err != nil {
			e.t.Errorf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		e.t.Errorf("Serve did not return after the client closed")
	}
}

// call calls a tool, failing the test on a protocol error.
func (e *env) call(name string, args any) *mcp.CallToolResult {
	e.t.Helper()
	return e.callWith(&mcp.CallToolParams{Name: name, Arguments: args})
}

func (e *env) callWith(p *mcp.CallToolParams) *mcp.CallToolResult {
	e.t.Helper()
	res, err := e.cs.CallTool(ctx(e.t), p)
	if err != nil {
		e.t.Fatalf("calling %s: %v", p.Name, err)
	}
	return res
}

// text joins the result's text contents.
func text(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}

// decode decodes the result's structured content into v.
func decode(t testing.TB, res *mcp.CallToolResult, v any) {
	t.Helper()
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("structured content %s: %v", data, err)
	}
}

// wantOK fails unless res is a successful result.
func wantOK(t testing.TB, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
}

// wantFailure fails unless res is a tool error, and returns its Failure.
func wantFailure(t testing.TB, res *mcp.CallToolResult) Failure {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", text(res))
	}
	var f Failure
	decode(t, res, &f)
	return f
}

func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
