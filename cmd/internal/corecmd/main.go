// Package corecmd holds the commands of the toolbox-core binary, the ones
// that need the compiler (HCL, JSON Schema) or the plugin host: lock,
// check, describe, and runs of tools whose events must be validated or
// that are plugins.
package corecmd

import (
	"encoding/json"
	"os"

	"github.com/hashicorp/go-plugin"
	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/pluginrun"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Main is the toolbox-core binary. It returns the exit code; plugin
// clients are cleaned up before it returns.
func Main() int {
	sandbox.Init()
	defer plugin.CleanupClients()
	io := cli.TerminalSafe(cli.IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	root := NewRoot(io)
	root.SetArgs(os.Args[1:])
	return cli.Execute(root, io)
}

// NewRoot builds toolbox-core's command tree: every command of the toolbox
// binary, run with the validator and plugin host, and the core commands.
func NewRoot(io cli.IOStreams) *cobra.Command {
	g := &cli.Globals{IO: io, CompileSchema: compileSchema, Plugins: pluginrun.Runner{}}
	return cli.NewRoot(g,
		func(g *cli.Globals) *cobra.Command { return NewCmdLock(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdCheck(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdDescribe(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdFmt(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdMCP(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdServe(g, nil) },
	)
}

func compileSchema(schema json.RawMessage) (launcher.EventValidator, error) {
	return validate.CompileEventSchema(schema)
}
