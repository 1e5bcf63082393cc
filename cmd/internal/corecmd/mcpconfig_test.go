package corecmd

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
)

// toolbox-core's mcp serves unless its first word is config, whatever its
// flags (a -C whose value is "config" included); mcp config is the
// command the toolbox binary runs itself.
func TestMCPConfigSubcommand(t *testing.T) {
	for _, c := range []struct {
		args   []string
		served bool
		dir    string
	}{
		{[]string{"mcp"}, true, ""},
		{[]string{"mcp", "-C", "config"}, true, "config"},
		{[]string{"mcp", "--recheck", "5m", "--dir", "config"}, true, "config"},
		{[]string{"mcp", "config", "--client", "nope"}, false, ""},
	} {
		var got *MCPOptions
		root := cli.NewRoot(testGlobals(), func(g *cli.Globals) *cobra.Command {
			return NewCmdMCP(g, func(o *MCPOptions) error { got = o; return nil })
		})
		root.SetArgs(c.args)
		err := root.Execute()
		switch {
		case c.served && (got == nil || got.Dir != c.dir || err != nil):
			t.Errorf("%v: served %+v, %v; want it served in %q", c.args, got, err, c.dir)
		case !c.served && (got != nil || err == nil || !strings.Contains(err.Error(), `unknown MCP client "nope"`)):
			t.Errorf("%v: served %v, %v; want mcp config's error", c.args, got != nil, err)
		}
	}
}
