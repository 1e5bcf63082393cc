package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"toolbox/sandbox"
)

// Exit codes (DESIGN.md §7).
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitDrift       = 3
	exitTimeout     = 124
	exitPreLaunch   = 125
	exitNotExec     = 126
	exitNotFound    = 127
	defaultToolFile = "toolbox.hcl"
)

// exitError carries a specific exit code; its message, when not empty, is
// printed as the error.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *codeError) Unwrap() error { return e.err }

// withCode wraps err so that Main exits with code.
func withCode(code int, err error) error { return &codeError{code: code, err: err} }

// usageError is a misuse of the command line; only it prints usage hints.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// IOStreams are the program's standard streams, replaceable in tests.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// globals are the flags every command shares.
type globals struct {
	File     string
	StateDir string
	Sandbox  string
	IO       IOStreams
}

// toolboxFile is -f, else $TOOLBOX_FILE, else ./toolbox.hcl.
func (g *globals) toolboxFile() string {
	if g.File != "" {
		return g.File
	}
	if f := os.Getenv("TOOLBOX_FILE"); f != "" {
		return f
	}
	return defaultToolFile
}

// Main runs the program and returns its exit code. Deferred cleanups live
// here, before os.Exit.
func Main() int {
	sandbox.Init()
	io := IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	root := newRootCmd(io)
	root.SetArgs(os.Args[1:])
	return run(root, io)
}

func run(root *cobra.Command, io IOStreams) int {
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	code := exitError
	var ce *codeError
	var ue *usageError
	switch {
	case errors.As(err, &ce):
		code = ce.code
	case errors.As(err, &ue):
		code = exitUsage
	case isFlagError(err):
		code = exitUsage
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(io.Err, "error: %s\n", msg)
	}
	if ce == nil && code == exitUsage {
		fmt.Fprintf(io.Err, "Run '%s --help' for usage.\n", root.CommandPath())
	}
	return code
}

type flagError struct{ error }

func isFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe)
}

func newRootCmd(io IOStreams) *cobra.Command {
	g := &globals{IO: io}
	root := &cobra.Command{
		Use:   "toolbox",
		Short: "Lock, probe and run the tools of an AI agent's toolbox",
		Long: `toolbox compiles a toolbox file (HCL) into a lock by probing every tool,
then runs tools only as the lock says.

  toolbox lock            probe every tool and write toolbox.lock.json
  toolbox run NAME        run a tool or capability with --args '{...}'`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&g.File, "file", "f", "", "the toolbox file (default ./toolbox.hcl, or $TOOLBOX_FILE)")
	pf.StringVar(&g.StateDir, "state-dir", "", "where processes and sessions are recorded")
	pf.StringVar(&g.Sandbox, "sandbox", "", "override the toolbox file's mechanism: bwrap, landlock, auto or none")
	root.AddCommand(
		newCmdLock(g, nil),
		newCmdCheck(g, nil),
		newCmdList(g, nil),
		newCmdSchema(g, nil),
		newCmdRun(g, nil),
		newCmdDescribe(g, nil),
		newCmdVersion(g),
	)
	return root
}

// exactArgs is cobra.ExactArgs returning a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}
