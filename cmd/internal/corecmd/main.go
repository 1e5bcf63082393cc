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
	"github.com/toolbox-dev/toolbox/compiler"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/mcprun"
	"github.com/toolbox-dev/toolbox/launcher/pluginrun"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Main is the toolbox-core binary. It returns the exit code; plugin
// clients are cleaned up before it returns.
func Main() int {
	sandbox.Init()
	// Landlock's helper starts from the toolbox binary beside this one when
	// it is of the same build: this binary's own start-up costs ~10 ms more
	// at every landlock start. Without it, this binary re-executes itself.
	if p, err := cli.FindHelper(); err == nil {
		_ = sandbox.UseHelper(p)
	}
	cli.UseReaper()
	// This binary links the HCL parser: a toolbox file whose bytes changed
	// is verified by its configuration (the toolbox binary hands such calls
	// over).
	launcher.ConfigDigest = compiler.ConfigDigestFile
	defer plugin.CleanupClients()
	io := cli.TerminalSafe(cli.IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	root := NewRoot(io)
	root.SetArgs(os.Args[1:])
	return cli.Execute(root, io)
}

// NewRoot builds toolbox-core's command tree: every command of the toolbox
// binary, run with the validator and plugin host, and the core commands.
func NewRoot(io cli.IOStreams) *cobra.Command {
	g := &cli.Globals{IO: io, CompileSchema: compileSchema, Plugins: pluginrun.Runner{}, MCP: mcprun.Runner{}}
	root := cli.NewRoot(g,
		func(g *cli.Globals) *cobra.Command { return NewCmdLock(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdCheck(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdDescribe(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdFmt(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdMCP(g, nil) },
		func(g *cli.Globals) *cobra.Command { return NewCmdServe(g, nil) },
	)
	root.Short = "The half of toolbox that links the compiler, the validator, the plugin host and the MCP server"
	root.Long = coreLong
	return root
}

// coreLong is what `toolbox-core --help` says it is.
const coreLong = `toolbox-core is the companion binary of toolbox. It holds what the toolbox
binary leaves out so that ` + "`toolbox run`" + ` starts fast: the HCL compiler (lock,
check, fmt, describe), the JSON Schema validator, the go-plugin host and the
MCP server (mcp, serve). toolbox hands it those commands, and the runs that
need a validator or a plugin host, by exec; keep it beside toolbox or on PATH.

Its commands are toolbox's own, with the same flags and exit codes:
` + "`toolbox-core lock`" + ` is ` + "`toolbox lock`" + `. Run toolbox instead; see ` + "`toolbox --help`" + `.`

func compileSchema(schema json.RawMessage) (launcher.EventValidator, error) {
	return validate.CompileEventSchema(schema)
}
