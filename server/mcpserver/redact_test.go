package mcpserver

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// mcpSecret is bound to the tools of TestCallsRedactSecrets; its core
// (after the quote) is what must never appear.
const mcpSecret = `tok"en-3c2b1a0f9e8d7c6b`

// TestCallsRedactSecrets: over MCP, the secret bound value that a oneshot,
// a stream and a service print (stdout, stderr, events, send answers) is in
// no result, progress notification, output page, status or inbox mail.
func TestCallsRedactSecrets(t *testing.T) {
	f := newFixture(t)
	token := protocol.Arg{Name: "token", Description: "t", Type: "s", BackingType: "string", Arity: "single", Mode: "env"}
	leak := `esc=$(printf '%s' "$TOKEN" | sed 's/"/\\"/g')`
	bind := func(tl *manifest.Tool) {
		tl.Bindings = map[string]*manifest.Binding{"token": {Env: "TB_TOKEN", Secret: true}}
	}
	bind(f.AddTool(t, "once", leak+`
echo "out $TOKEN"; echo "err $TOKEN" >&2; exit 5`, v1("once", token)))
	bind(f.AddTool(t, "flow", leak+`
printf '{"v":"%s"}\n' "$esc"; echo "err $TOKEN" >&2`, v2("flow", &protocol.Process{Mode: protocol.ProcessStream, Output: &protocol.Output{Framing: protocol.FramingJSONL}}, token)))
	bind(f.AddTool(t, "svc", leak+`
echo "up with $TOKEN" >&2; echo ready
while read -r line; do printf '{"got":"%s"}\n' "$esc"; done`, v2("svc", &protocol.Process{
		Mode:   protocol.ProcessService,
		Output: &protocol.Output{Framing: protocol.FramingJSONL},
		Input:  &protocol.Input{Framing: protocol.FramingJSONL},
		Ready:  &protocol.Ready{Kind: "line", Match: "^ready$"},
	}, token)))
	e := f.start(t, func(o *Options) { o.CallerEnv = append(os.Environ(), "TB_TOKEN="+mcpSecret) })

	var seen []string
	look := func(what string, res *mcp.CallToolResult) {
		t.Helper()
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, what+": "+string(b))
	}
	look("oneshot", e.call("once", nil))
	look("stream", e.call("flow", nil))
	res := e.call("svc", nil)
	wantOK(t, res)
	var st Started
	decode(t, res, &st)
	look("send", e.call("svc_send", map[string]any{"process": st.Process, "event": map[string]any{"op": "x"}}))
	look("output", e.call("processes", map[string]any{"action": "output", "process": st.Process, "cursor": 0}))
	look("stop", e.call("processes", map[string]any{"action": "stop", "process": st.Process}))
	look("status", e.call("processes", map[string]any{"action": "status", "process": st.Process}))
	testenv.Eventually(t, 5*time.Second, "the service's mails", func() bool {
		res := e.call("inbox", map[string]any{"cursor": 0})
		b, _ := json.Marshal(res)
		if !strings.Contains(string(b), `\"kind\":\"exit\"`) {
			return false
		}
		look("inbox", res)
		return true
	})
	e.mu.Lock()
	seen = append(seen, "progress: "+strings.Join(e.progress, "\n"))
	e.mu.Unlock()

	for _, s := range seen {
		if strings.Contains(s, "3c2b1a0f9e8d7c6b") {
			t.Errorf("the secret leaked in %s", s)
		}
	}
	all := strings.Join(seen, "\n")
	for _, want := range []string{"out " + launcher.Redacted, "err " + launcher.Redacted, "up with " + launcher.Redacted, `"got\":\"` + launcher.Redacted} {
		if !strings.Contains(all, want) {
			t.Errorf("nothing says %q in %s", want, all)
		}
	}
}
