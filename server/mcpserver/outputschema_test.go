package mcpserver

import (
	"encoding/json"
	"github.com/toolbox-dev/toolbox/manifest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// TestOutputSchemas: every tool whose result is structured declares an
// output schema, and every result it gives, success or error, validates
// against it (clients check structured content against the schema even
// for error results); text tools declare none. The built-ins take what a
// strict model sends: env as NAME=value strings, null for an absent arg.
func TestOutputSchemas(t *testing.T) {
	f := newFixture(t)
	f.Lock.Builtins = []string{mcpnames.BuiltinProcess}
	f.Lock.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	rehash(t, f, "sandbox = \"none\"\nbuiltin \"process\" { unconfined = true }\n")
	jsonl := &protocol.Process{Output: &protocol.Output{Framing: protocol.FramingJSONL}}
	f.AddTool(t, "events", `echo '{"a":1}'`, v2("events", jsonl, arg("who", protocol.ArityOptional)))
	f.AddTool(t, "quiet", `exit 0`, v2("quiet", jsonl))
	f.AddTool(t, "echo", `echo "hello $2"`, v1("echo", arg("who", protocol.ArityOptional)))
	f.AddTool(t, "watch", serviceScript, serviceDescribe("watch"))
	e := f.start(t, nil)

	list, err := e.cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	validators := map[string]*validate.EventValidator{}
	for _, tl := range list.Tools {
		if tl.OutputSchema == nil {
			continue
		}
		raw, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(raw), `{"anyOf":`) || !strings.Contains(string(raw), `"type":"object"`) {
			t.Errorf("%s: output schema %s: want an object admitting a failure", tl.Name, raw)
		}
		if validators[tl.Name], err = validate.CompileEventSchema(raw); err != nil {
			t.Fatalf("%s: output schema does not compile: %v", tl.Name, err)
		}
	}
	for _, name := range []string{"echo"} {
		if validators[name] != nil {
			t.Errorf("%s returns text but declares an output schema", name)
		}
	}
	check := func(name string, args any, wantError bool) *mcp.CallToolResult {
		t.Helper()
		res := e.call(name, args)
		if res.IsError != wantError {
			t.Fatalf("%s %v: isError %t, want %t: %s", name, args, res.IsError, wantError, text(res))
		}
		v := validators[name]
		if v == nil {
			t.Fatalf("%s declares no output schema", name)
		}
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Validate(raw); err != nil {
			t.Errorf("%s %v: structured content %s does not match the output schema: %v", name, args, raw, err)
		}
		return res
	}
	check("events", map[string]any{"who": nil}, false) // null: the optional arg is absent
	check("quiet", map[string]any{}, false)
	var started Started
	decode(t, check("watch", map[string]any{}, false), &started)
	check("watch_send", map[string]any{"process": started.Process, "event": map[string]any{"op": "x"}}, false)
	check("watch_send", map[string]any{"process": started.Process, "event": map[string]any{"nope": 1}}, true)
	check("processes", map[string]any{"action": "list"}, false)
	check("processes", map[string]any{"action": "status", "process": started.Process, "wait_seconds": nil}, false)
	check("processes", map[string]any{"action": "tail", "process": started.Process}, false)
	check("processes", map[string]any{"action": "output", "process": started.Process, "cursor": nil, "max": nil}, false)
	check("processes", map[string]any{"action": "status"}, true)
	check("inbox", map[string]any{"cursor": nil}, false)
	res := check("process_run", map[string]any{"command": "echo $GREETING", "env": []any{"GREETING=hello"}, "name": nil, "label": nil, "cwd": nil, "timeout_seconds": nil, "wait_seconds": nil}, false)
	if !strings.Contains(text(res), `hello\n`) {
		t.Errorf("env as NAME=value: %s", text(res))
	}
	check("process_run", map[string]any{"command": "true", "env": []any{"NOEQUALS"}}, true)
	check("process_status", map[string]any{"process": started.Process}, false)
	check("process_status", map[string]any{}, true)
	check("process_kill", map[string]any{"process": started.Process, "force": nil}, false)
}
