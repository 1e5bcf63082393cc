package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher"
)

// helpTopics are pages `toolbox help TOPIC` prints.
var helpTopics = map[string]string{
	"toolbox-file": toolboxFileHelp,
	"exit-codes":   exitCodesHelp,
}

// NewCmdHelp replaces cobra's help command: `toolbox help` and
// `toolbox help COMMAND` show command help as usual, `toolbox help TOPIC`
// a page (toolbox-file, exit-codes), and `toolbox help NAME` the longer
// help of a locked tool or capability (what `TOOL help [command]` prints,
// fetched on demand).
func NewCmdHelp(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND | TOPIC | TOOL]",
		Short: "Help about a command, a topic (toolbox-file, exit-codes) or a locked tool",
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			names, dir := completeNames(g)(cmd, args, toComplete)
			for topic := range helpTopics {
				names = append(names, cobra.CompletionWithDesc(topic, "help topic"))
			}
			for _, c := range cmd.Root().Commands() {
				if c.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return names, dir
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			if len(args) == 0 {
				return root.Help()
			}
			if c, rest, err := root.Find(args); err == nil && c != root && len(rest) == 0 {
				if c.Annotations[delegatedAnnotation] != "" && g.Delegate != nil {
					return g.Delegate() // toolbox-core knows its flags
				}
				return c.Help()
			}
			if page, ok := helpTopics[args[0]]; ok {
				_, err := fmt.Fprint(g.IO.Out, page)
				return err
			}
			lockPath, l, err := ReadLock(g)
			if err != nil {
				return fmt.Errorf("%q is neither a command, a help topic nor a tool: %w", args[0], err)
			}
			abs, err := filepath.Abs(lockPath)
			if err != nil {
				return err
			}
			text, err := launcher.Help(context.Background(), abs, l, args[0], os.Environ())
			if errors.Is(err, launcher.ErrNeedsConfigParser) && g.Delegate != nil {
				return g.Delegate() // toolbox-core verifies the configuration
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(g.IO.Out, text)
			return err
		},
	}
}

const toolboxFileHelp = `The toolbox file (HCL), by default ./toolbox.hcl:

  sandbox       = "auto"              # bwrap | landlock | auto | none (default none).
                                      # A tool that declares runtime.sandbox fails to
                                      # lock under "none"; nothing runs weaker than declared.
  envdir_root   = "/etc/toolbox/env"  # optional: a tool that declares runtime.envdir
                                      # reads <envdir_root>/<tool name> (daemontools rules)
  env_allowlist = ["PATH", "HOME"]    # optional: unsandboxed tools see only these variables
  workspace     = "."                 # optional default workspace, relative to this file:
                                      # what "{workspace}" names in a tool's sandbox paths
                                      # when neither --workspace nor $TOOLBOX_WORKSPACE
                                      # does (else the current directory); never locked

  tool "read_file" {                  # an executable speaking the bash-tool protocol
    path         = "tools/read_file"  # relative to the toolbox file
    timeout      = "30s"              # default call timeout of toolbox run (else 2m)
    allow_run_as = false              # refuse the tool if it declares runtime.run_as
    send         = false              # a service: leave its <name>_send out of what
                                      # models see (list, schema, MCP)
  }

  plugin "walk" { path = "plugins/walk" }   # a hashicorp/go-plugin tool (plugins/sdk)

  tools "dev" {                       # every executable file one level down,
    dir    = "tools/dev"              # named after the file without its extension
    filter = ".sh"                    # optional substring filter on the file name
  }

  capability "search" {              # what the model sees: one name, several backends
    description = "Search the repository"
    backends    = ["search_rg", "search_grep"]   # preferred first; same args required;
                                                  # "tool.command" names one command
    required    = true                # check --probe exits 2 when no backend is usable
  }

  builtin "process" {                 # background shell commands (off unless declared)
    sandbox {                         # each command runs as bash -c in this sandbox
      fs {
        read  = ["{workspace}"]       # the call's workspace, or paths relative to this file
        write = ["{workspace}"]
      }
      net = "none"                    # host | none
      tmp = "shared"                  # shared | private
    }
    # or, instead of sandbox: unconfined = true (a shell as toolbox's user)
  }

  limits {                            # resource limits, toolbox-wide; the same block in a
    memory      = "512MiB"            # tool, plugin, tools or builtin block overrides it
    file_size   = "1GiB"              # attribute by attribute. Defaults: memory 4GiB,
    open_files  = 1024                # file_size 256MiB, open_files 4096, cpu_seconds
    cpu_seconds = 600                 # unlimited, processes 4096, tmp_size 256MiB.
    processes   = 256                 # Sizes: bytes or KiB/MiB/GiB/TiB; any value may be
    tmp_size    = "64MiB"             # "unlimited". check --probe says what is enforced.
  }
  mcp_server "fs" {                   # an MCP server over stdio; its tools become tools
    command = ["node", "mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "docs"]
    env     = { LOG_LEVEL = "warn" }  # optional; envdir = true reads <envdir_root>/fs
    sandbox {                         # required, or unconfined = true
      fs { read = ["mcp", "docs"] }   # the install directory and the data
      net = "none"
    }
    tools   = ["read_text_file"]      # optional subset; without it, every listed tool
    rename  = { read_text_file = "fs_read" }
    timeout = "30s"                   # optional default call timeout
    limits { memory = "1GiB" }        # optional, as in a tool block
  }
  # lock pins the server and every tool's definition; a call whose server lists
  # anything else is refused, and lock --check reports it (exit 3)
  # over streamable HTTP: url = "https://host/mcp" instead of command (no
  # sandbox), with envdir = true and token = "VAR" for a bearer token

Names: 1 to 64 letters, digits, '_' or '-'. A tool whose describe lists
commands becomes one tool per command, named tool.command. Errors name
file:line:col, the block and the fix. toolbox fmt formats the file.
`

const exitCodesHelp = `Exit codes:

  0    ok
  1    error (a bad toolbox file, a tool that cannot be locked, ...)
  2    usage; check, check --probe and lock (after writing the lock): a
       required capability has no usable backend
  3    lock --check and fmt --check: something would change
  run passes the tool's own exit code through, and uses
  124  the call timed out; the tool's process group was stopped
  125  refused or failed before launch (stale lock, bad arguments)
  126  the tool's binary cannot be executed
  127  the tool's binary is missing
`
