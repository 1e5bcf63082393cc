package mcpserver

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/protocol"
)

// TestHelpResource: toolbox://help/NAME is what `TOOL help COMMAND` prints,
// fetched on demand for a command tool by its MCP name; a tool without a
// help verb gets its describe document rendered; an unknown name is a
// resource-not-found error.
func TestHelpResource(t *testing.T) {
	f := newFixture(t)
	kv := v2("kv", nil)
	kv.Commands = []protocol.Command{{Name: "get", Description: "read a key", Args: []protocol.Arg{arg("key", protocol.AritySingle)}}}
	f.AddTool(t, "kv", `if [ "$1" = help ]; then echo "longer help for $2"; fi`, kv).Command = "get"
	f.Lock.Tools["kv.get"] = f.Lock.Tools["kv"]
	delete(f.Lock.Tools, "kv")
	f.AddTool(t, "echo", `exit 3`, v1("echo", arg("who", protocol.AritySingle)))
	e := f.start(t, nil)

	res, err := e.cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: HelpURIPrefix + "kv_get"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Contents[0].Text; got != "longer help for get\n" {
		t.Errorf("kv_get help = %q", got)
	}
	res, err = e.cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: HelpURIPrefix + "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Contents[0].Text; !strings.HasPrefix(got, "echo: ") || !strings.Contains(got, "who (string, required)") {
		t.Errorf("echo help = %q", got)
	}
	if _, err := e.cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: HelpURIPrefix + "nosuch"}); err == nil {
		t.Error("help of an unknown name succeeded")
	}
	tpl, err := e.cs.ListResourceTemplates(ctx(t), nil)
	if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != HelpURIPrefix+"{name}" {
		t.Errorf("templates = %+v, %v", tpl, err)
	}
}
