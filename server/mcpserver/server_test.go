package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// TestListTools: every catalog entry (capabilities by their name, tools
// no capability hides, commands mapped to strict names), the send
// companion with the declared input.event verbatim, and the built-ins.
func TestListTools(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", `echo "hello $2"`, v1("echo", arg("who", protocol.AritySingle)))
	f.AddTool(t, "one", `echo "one: $2"`, v1("one", arg("who", protocol.AritySingle)))
	f.AddTool(t, "two", `echo "two: $2"`, v1("two", arg("who", protocol.AritySingle)))
	f.Lock.Capabilities["greet"] = &manifest.Capability{Description: "say hello", Backends: []string{"one", "two"}, Active: "one"}
	kv := v2("kv", nil)
	kv.Commands = []protocol.Command{{Name: "get", Description: "read a key", Args: []protocol.Arg{arg("key", protocol.AritySingle)}}}
	f.AddTool(t, "kv", `echo "$@"`, kv).Command = "get"
	f.Lock.Tools["kv.get"] = f.Lock.Tools["kv"]
	delete(f.Lock.Tools, "kv")
	f.AddTool(t, "watch", serviceScript, serviceDescribe("watch"))
	f.Lock.Builtins = []string{mcpnames.BuiltinProcess}
	f.Lock.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	e := f.start(t, nil)

	res, err := e.cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	var names []string
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
		names = append(names, tl.Name)
	}
	want := []string{"echo", "greet", "inbox", "kv_get", "process_kill", "process_run", "process_status", "processes", "watch", "watch_send"}
	slices.Sort(names)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if got, _ := mcpnames.ToolNames(f.Lock); !reflect.DeepEqual(got, want) {
		t.Errorf("mcpnames.ToolNames = %v, want the served %v", got, want)
	}
	if d := tools["greet"].Description; d != "say hello" {
		t.Errorf("greet description = %q", d)
	}
	if d := tools["kv_get"].Description; d != "read a key" {
		t.Errorf("kv_get description = %q", d)
	}
	schema := func(name string) map[string]any {
		s, ok := tools[name].InputSchema.(map[string]any)
		if !ok {
			t.Fatalf("%s: input schema %T", name, tools[name].InputSchema)
		}
		return s
	}
	if req := schema("echo")["required"]; !reflect.DeepEqual(req, []any{"who"}) {
		t.Errorf("echo required = %v", req)
	}
	if props := schema("kv_get")["properties"].(map[string]any); props["key"] == nil {
		t.Errorf("kv_get properties = %v, want the command's key", props)
	}
	event := schema("watch_send")["properties"].(map[string]any)["event"]
	var declared any
	if err := json.Unmarshal(f.Lock.Tools["watch"].Describe.Process.Input.Event, &declared); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(event, declared) {
		t.Errorf("watch_send event schema = %v, want the declared %v", event, declared)
	}
	if !strings.Contains(tools["watch"].Description, "watch_send") {
		t.Errorf("watch description does not name its send companion: %q", tools["watch"].Description)
	}
}

// TestNoProcessTools: a lock without services or builtin "process" gets
// neither processes nor inbox.
func TestNoProcessTools(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", `echo hi`, nil)
	got, err := mcpnames.ToolNames(f.Lock)
	if err != nil || !reflect.DeepEqual(got, []string{"echo"}) {
		t.Fatalf("mcpnames.ToolNames = %v, %v; want [echo]", got, err)
	}
}

func TestCallOneshot(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", `echo "hello $2 from $TOOLBOX_SESSION"`, v1("echo", arg("who", protocol.AritySingle)))
	e := f.start(t, nil)
	res := e.call("echo", map[string]any{"who": "ann"})
	wantOK(t, res)
	got := text(res)
	if !strings.HasPrefix(got, "hello ann from mcp-") {
		t.Errorf("text = %q, want hello ann from the connection's session", got)
	}
	if res.StructuredContent != nil {
		t.Errorf("a text result has structured content %v", res.StructuredContent)
	}
	// The same connection keeps its session.
	if again := text(e.call("echo", map[string]any{"who": "bob"})); strings.TrimPrefix(again, "hello bob") != strings.TrimPrefix(got, "hello ann") {
		t.Errorf("second call's session differs: %q vs %q", again, got)
	}
}

func TestCallCapabilityNamesBackend(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "one", `echo "one: $2"`, v1("one", arg("who", protocol.AritySingle)))
	f.AddTool(t, "two", `echo "two: $2"`, v1("two", arg("who", protocol.AritySingle)))
	f.Lock.Capabilities["greet"] = &manifest.Capability{Backends: []string{"one", "two"}, Active: "one"}

	res := f.start(t, nil).call("greet", map[string]any{"who": "ann"})
	wantOK(t, res)
	if got := text(res); !strings.HasPrefix(got, "one: ann\n") || !strings.Contains(got, `served by backend "one"`) {
		t.Errorf("text = %q, want the output and the backend", got)
	}

	// --backend overrides reach the server.
	res = f.start(t, func(o *Options) { o.Backends = map[string]string{"greet": "two"} }).call("greet", map[string]any{"who": "bob"})
	wantOK(t, res)
	if got := text(res); !strings.HasPrefix(got, "two: bob\n") || !strings.Contains(got, `served by backend "two"`) {
		t.Errorf("with --backend greet=two: text = %q", got)
	}
}

func TestCallJSONLEventsStructured(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "ev", `echo '{"n":1}'; echo 'not json'`, v2("ev", &protocol.Process{Output: &protocol.Output{Framing: protocol.FramingJSONL}}))
	res := f.start(t, nil).call("ev", nil)
	wantOK(t, res)
	var ev EventsResult
	decode(t, res, &ev)
	if ev.Count != 2 || len(ev.Events) != 2 || string(ev.Events[0].Event) != `{"n":1}` || !ev.Events[1].Invalid || ev.Events[1].Raw != "not json" {
		t.Errorf("events = %+v", ev)
	}
	if !strings.Contains(text(res), `"events"`) {
		t.Errorf("text content is not the JSON: %q", text(res))
	}
}

func TestCallBinaryIsResource(t *testing.T) {
	f := newFixture(t)
	d := v1("img")
	d.OutputMediaType = "image/png"
	f.AddTool(t, "img", `printf '\211PNG\r\n\032\n\377'`, d)
	res := f.start(t, nil).call("img", nil)
	wantOK(t, res)
	if len(res.Content) != 1 {
		t.Fatalf("content = %v", res.Content)
	}
	er, ok := res.Content[0].(*mcp.EmbeddedResource)
	if !ok {
		t.Fatalf("content[0] is %T, want an embedded resource", res.Content[0])
	}
	if er.Resource.MIMEType != "image/png" || !bytes.Equal(er.Resource.Blob, []byte("\x89PNG\r\n\x1a\n\xff")) || er.Resource.URI == "" {
		t.Errorf("resource = %+v", er.Resource)
	}
}

func TestCallFailureIsToolError(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "bad", `echo partial; echo boom >&2; exit 3`, nil)
	f.AddTool(t, "slow", `sleep 5`, nil).Runtime.TimeoutSeconds = 0.3
	e := f.start(t, nil)

	fl := wantFailure(t, e.call("bad", nil))
	if fl.ExitCode != 3 || !strings.Contains(fl.StderrTail, "boom") || fl.Output != "partial\n" || fl.Tool != "bad" {
		t.Errorf("failure = %+v", fl)
	}
	fl = wantFailure(t, e.call("slow", nil))
	if fl.ExitCode != 124 || !fl.TimedOut {
		t.Errorf("timeout failure = %+v", fl)
	}
}

func TestCallBadArgumentsIsToolError(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", `echo "$2"`, v1("echo", arg("who", protocol.AritySingle)))
	e := f.start(t, nil)
	for _, args := range []map[string]any{{}, {"who": "a", "whom": "b"}, {"who": map[string]any{}}} {
		fl := wantFailure(t, e.call("echo", args))
		if fl.ExitCode != 125 || !strings.Contains(fl.Error, "who") {
			t.Errorf("args %v: failure = %+v, want exit 125 naming the argument", args, fl)
		}
	}
}

func TestCallRefusedWhenBinaryChanged(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", `echo hi`, nil)
	e := f.start(t, nil)
	locktest.WriteFile(t, f.Dir+"/tools/echo", "#!/bin/sh\necho changed\n", 0o755)
	fl := wantFailure(t, e.call("echo", nil))
	if fl.ExitCode != 125 || !strings.Contains(fl.Error, "toolbox lock") {
		t.Errorf("failure = %+v, want a refusal naming the fix", fl)
	}
}

func TestLongCallSendsProgress(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "slow", `sleep 0.4; echo done`, nil)
	e := f.start(t, func(o *Options) { o.ProgressInterval = 50 * time.Millisecond })

	res := e.call("slow", nil) // no progress token: no progress
	wantOK(t, res)
	e.mu.Lock()
	n := len(e.progress)
	e.mu.Unlock()
	if n != 0 {
		t.Errorf("%d progress notifications without a progress token", n)
	}

	p := &mcp.CallToolParams{Name: "slow"}
	p.SetProgressToken("tok")
	wantOK(t, e.callWith(p))
	testenv.Eventually(t, 5*time.Second, "a progress notification", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.progress) > 0
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.progress) == 0 || !strings.Contains(e.progress[0], "slow: still waiting") {
		t.Errorf("progress = %q", e.progress)
	}
}

// TestNewRefuses: no server without a supervisor, nor from a lock whose
// names collide once mapped (a lock written before the compiler checked).
func TestNewRefuses(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "kv_get", `true`, nil)
	f.AddTool(t, "kv.get", `true`, nil)
	if _, err := New(Options{LockPath: f.LockPath, Lock: f.Lock}); err == nil {
		t.Error("New accepted options without a supervisor")
	}
	_, err := New(Options{LockPath: f.LockPath, Lock: f.Lock, Supervisor: newSupervisor(t, f)})
	var ne *mcpnames.NameError
	if !errors.As(err, &ne) || ne.Name != "kv_get" {
		t.Errorf("New: %v, want the kv_get collision", err)
	}
}
