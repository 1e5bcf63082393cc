package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// Main is the toolbox binary: run, list, schema and version here; every
// other command, and a run that needs a JSON Schema validator or the plugin
// host, is handed to toolbox-core (ExecCore). It returns the exit code.
func Main() int {
	sandbox.Init()
	UseReaper()
	io := TerminalSafe(IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	g := &Globals{IO: io, Delegate: ExecCore}
	root := newToolboxRoot(g)
	root.SetArgs(os.Args[1:])
	return Execute(root, io)
}

// newToolboxRoot is the toolbox binary's command tree: this package's
// commands, and toolbox-core's handed over (g.Delegate).
func newToolboxRoot(g *Globals) *cobra.Command {
	root := NewRoot(g)
	for _, c := range CoreCommands {
		cmd := DelegatedCmd(g, c.Use, c.Short)
		if cmd.Name() == "mcp" {
			// mcp serves in toolbox-core; mcp config needs nothing of
			// it, and here knows the path of the binary clients start.
			cmd.AddCommand(NewCmdMCPConfig(g, nil))
		}
		root.AddCommand(cmd)
	}
	return root
}

// CoreCommands are the commands toolbox-core runs, as the toolbox binary
// lists them in its help. A test checks the list against toolbox-core's
// command tree.
var CoreCommands = []struct{ Use, Short string }{
	{"lock", "Probe every tool and write the lock file"},
	{"check", "Check that the toolbox file and its lock load (--probe: run every probe now)"},
	{"describe PATH", "Run one tool binary's describe and validate it (for tool authors)"},
	{"fmt [FILE...]", "Format toolbox files in canonical HCL layout"},
	{"mcp", "Serve the locked toolbox to an MCP client over stdio"},
	{"serve", "Run the daemon that owns services and background commands for the CLI"},
}
