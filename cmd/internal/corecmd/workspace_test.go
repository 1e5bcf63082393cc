package corecmd

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
)

// mcp, serve and check take --workspace into the shared globals.
func TestWorkspaceFlags(t *testing.T) {
	for name, build := range map[string]func(g *cli.Globals) *cobra.Command{
		"mcp":   func(g *cli.Globals) *cobra.Command { return NewCmdMCP(g, func(*MCPOptions) error { return nil }) },
		"serve": func(g *cli.Globals) *cobra.Command { return NewCmdServe(g, func(*ServeOptions) error { return nil }) },
		"check": func(g *cli.Globals) *cobra.Command { return NewCmdCheck(g, func(*CheckOptions) error { return nil }) },
	} {
		g := &cli.Globals{}
		cmd := build(g)
		args := []string{"--workspace", "/srv/proj"}
		if name == "check" {
			args = append(args, "--probe")
		}
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil || g.Workspace != "/srv/proj" {
			t.Errorf("%s: %v, workspace %q", name, err, g.Workspace)
		}
	}
	g := &cli.Globals{}
	cmd := NewCmdCheck(g, func(*CheckOptions) error { return nil })
	cmd.SetArgs([]string{"--workspace", "/srv/proj"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil {
		t.Error("check --workspace without --probe: no error")
	}
}
