package corecmd

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/compiler"
)

// DescribeOptions are the inputs of the describe command.
type DescribeOptions struct {
	*cli.Globals
	Path   string
	JSON   bool
	Plugin bool
}

// NewCmdDescribe builds the describe command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdDescribe(g *cli.Globals, runF func(*DescribeOptions) error) *cobra.Command {
	opts := &DescribeOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "describe PATH",
		Short: "Run one tool binary's describe and validate it (for tool authors)",
		Args:  cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			if runF != nil {
				return runF(opts)
			}
			return describeRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the validated document as JSON")
	cmd.Flags().BoolVar(&opts.Plugin, "plugin", false, "PATH is a go-plugin tool: start it and ask over gRPC")
	return cmd
}

func describeRun(ctx context.Context, opts *DescribeOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	d, _, err := compiler.DescribeBinary(ctx, opts.Path, opts.Plugin, os.Environ())
	if err != nil {
		return err
	}
	if opts.JSON {
		return cli.WriteJSON(opts.IO.Out, d)
	}
	mode := "oneshot"
	if d.Process != nil && d.Process.Mode != "" {
		mode = d.Process.Mode
	}
	fmt.Fprintf(opts.IO.Out, "%s: valid protocol %d describe document\n", opts.Path, d.EffectiveProtocol())
	fmt.Fprintf(opts.IO.Out, "slug: %s\nmode: %s\ncheck: %t\n", d.Slug, mode, d.Check)
	fmt.Fprintf(opts.IO.Out, "args:\n")
	for _, a := range d.Args {
		fmt.Fprintf(opts.IO.Out, "  %s (%s, %s, %s): %s\n", a.Name, a.BackingType, a.Arity, a.Mode, a.Description)
	}
	if len(d.Args) == 0 {
		fmt.Fprintln(opts.IO.Out, "  (none)")
	}
	for _, c := range d.Commands {
		fmt.Fprintf(opts.IO.Out, "command %s: %s (%d args)\n", c.Name, c.Description, len(c.Args))
	}
	return nil
}
