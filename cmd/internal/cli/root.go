// Package cli holds the commands of the toolbox binaries that stay cheap to
// start: run, list, schema, version, the root command, exit codes and the
// hand-over to toolbox-core. It links no JSON Schema library, no HCL parser
// and no gRPC, so that `toolbox run` starts in about the time a run needs
// (see bench/run.sh). The commands that need those (lock, check, describe)
// live in package corecmd and run in the toolbox-core binary; the toolbox
// binary hands them over by exec (Delegate).
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// Exit codes (DESIGN.md §7).
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitDrift       = 3
	ExitTimeout     = 124
	defaultToolFile = "toolbox.hcl"
)

// CodeError carries a specific exit code; its message, when not empty, is
// printed as the error.
type CodeError struct {
	Code int
	Err  error
}

func (e *CodeError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *CodeError) Unwrap() error { return e.Err }

// WithCode wraps err so that Execute exits with code.
func WithCode(code int, err error) error { return &CodeError{Code: code, Err: err} }

// UsageError is a misuse of the command line; only it prints a usage hint.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *UsageError) Unwrap() error { return e.Err }

// IOStreams are the program's standard streams, replaceable in tests.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Globals are the flags every command shares, and what the binary can do
// itself. CompileSchema, Plugins and MCP are nil in the toolbox binary: a
// run that needs them is handed to toolbox-core.
type Globals struct {
	File     string
	StateDir string
	Sandbox  string
	// Workspace is --workspace of the commands that take it
	// (AddWorkspaceFlag); see ChosenWorkspace.
	Workspace string
	IO        IOStreams
	// CompileSchema validates jsonl events (validate.CompileEventSchema).
	CompileSchema func(schema json.RawMessage) (launcher.EventValidator, error)
	// Plugins runs plugin tools.
	Plugins launcher.PluginRunner
	// MCP calls the tools of locked MCP servers (nil in the toolbox
	// binary, which links no MCP client).
	MCP launcher.MCPRunner
	// Delegate hands the whole command line to toolbox-core; nil in
	// toolbox-core itself.
	Delegate func() error
}

// StateDirInUse is the state directory toolbox uses (--state-dir, else
// the default), "" when there is none: no sandboxed tool may reach it.
func (g *Globals) StateDirInUse() string {
	d, err := wire.StateDir(g.StateDir)
	if err != nil {
		return ""
	}
	return d
}

// ToolboxFile is -f, else $TOOLBOX_FILE, else ./toolbox.hcl.
func (g *Globals) ToolboxFile() string {
	if g.File != "" {
		return g.File
	}
	if f := os.Getenv("TOOLBOX_FILE"); f != "" {
		return f
	}
	return defaultToolFile
}

// Execute runs root and maps its error to an exit code, printing the error
// (and a usage hint for usage errors) to io.Err.
func Execute(root *cobra.Command, io IOStreams) int {
	defer flushTerminal(io.Err)
	defer flushTerminal(io.Out)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	if cmd == nil {
		cmd = root
	}
	code := ExitError
	var ce *CodeError
	var ue *UsageError
	var fe *flagError
	switch {
	case errors.As(err, &ce):
		code = ce.Code
	case errors.As(err, &ue), errors.As(err, &fe):
		code = ExitUsage
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(io.Err, "error: %s\n", msg)
	}
	if ce == nil && code == ExitUsage {
		fmt.Fprintf(io.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

type flagError struct{ error }

// NewRoot builds the root command with the shared flags and the commands
// of this package; more adds the binary's own commands.
func NewRoot(g *Globals, more ...func(*Globals) *cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "toolbox",
		Short: "Lock, probe and run the tools of an AI agent's toolbox",
		Long: `toolbox compiles a toolbox file (HCL) into a lock by probing every tool,
then runs tools only as the lock says.

  toolbox lock            probe every tool and write toolbox.lock.json
  toolbox run NAME        run a tool or capability with --args '{...}'`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what `toolbox version` prints.
		Version: Version(),
	}
	root.SetVersionTemplate(versionLine())
	root.SetIn(g.IO.In)
	root.SetOut(g.IO.Out)
	root.SetErr(g.IO.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&g.File, "file", "f", "", "the toolbox file (default ./toolbox.hcl, or $TOOLBOX_FILE)")
	pf.StringVar(&g.StateDir, "state-dir", "", "where processes and sessions are recorded")
	pf.StringVar(&g.Sandbox, "sandbox", "", "override the toolbox file's mechanism: bwrap, landlock, auto or none")
	root.AddCommand(
		NewCmdList(g, nil),
		NewCmdSchema(g, nil),
		NewCmdRun(g, nil),
		NewCmdVersion(g),
		NewCmdStart(g, nil),
		NewCmdSend(g, nil),
		NewCmdProcesses(g),
		NewCmdInbox(g, nil),
	)
	for _, f := range more {
		root.AddCommand(f(g))
	}
	root.SetHelpCommand(NewCmdHelp(g))
	return root
}

// ExactArgs wants n positional arguments and returns a usage error naming
// what is missing, from the words of the command's Use ("run NAME" misses
// NAME), or the first argument too many. A command may say more about its
// arguments in its Annotations[ArgsAnnotation], added to the "missing"
// message.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < n:
			missing := "an argument"
			if names := argNames(cmd.Use); len(args) < len(names) {
				missing = strings.Join(names[len(args):min(n, len(names))], " ")
			}
			if what := cmd.Annotations[ArgsAnnotation]; what != "" {
				missing += ", " + what
			}
			return &UsageError{Err: fmt.Errorf("missing %s; usage: %s", missing, cmd.UseLine())}
		case len(args) > n:
			return &UsageError{Err: fmt.Errorf("unexpected argument %q; usage: %s", args[n], cmd.UseLine())}
		}
		return nil
	}
}

// ArgsAnnotation is the key of a command's annotation that says what its
// positional arguments are, for ExactArgs' message.
const ArgsAnnotation = "toolbox/args"

// argNames are the positional argument names of a Use line: the words
// after the command's name up to the first flag, quotes removed.
func argNames(use string) []string {
	var names []string
	for _, w := range strings.Fields(use)[1:] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
			break
		}
		names = append(names, strings.Trim(w, `'"`))
	}
	return names
}

// NoArgs refuses positional arguments with a usage error.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &UsageError{Err: fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}
