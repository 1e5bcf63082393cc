package corecmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/compiler"
	"github.com/toolbox-dev/toolbox/internal/atomicfile"
)

// FmtOptions are the inputs of the fmt command.
type FmtOptions struct {
	*cli.Globals
	Files []string
	Check bool
}

// NewCmdFmt builds the fmt command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdFmt(g *cli.Globals, runF func(*FmtOptions) error) *cobra.Command {
	opts := &FmtOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "fmt [FILE...]",
		Short: "Format toolbox files in canonical HCL layout",
		Long: `fmt rewrites toolbox files (default: the one -f names) in canonical HCL
layout. A file that does not parse is reported and left alone. With --check it
writes nothing, lists the files that are not formatted and exits 3.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if len(opts.Files) == 0 {
				if err := opts.NeedToolboxFile(); err != nil {
					return err
				}
				opts.Files = []string{opts.ToolboxFile()}
			}
			if runF != nil {
				return runF(opts)
			}
			return fmtRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Check, "check", false, "list unformatted files and exit 3; write nothing")
	return cmd
}

func fmtRun(opts *FmtOptions) error {
	var errs []error
	var unformatted []string
	for _, f := range opts.Files {
		src, err := compiler.ReadToolboxFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out, err := compiler.Format(src, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if bytes.Equal(src, out) {
			continue
		}
		unformatted = append(unformatted, f)
		if opts.Check {
			fmt.Fprintln(opts.IO.Out, f)
			continue
		}
		if err := writeAtomic(f, out); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(opts.IO.Err, "formatted %s\n", f)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if opts.Check && len(unformatted) > 0 {
		return cli.WithCode(cli.ExitDrift, fmt.Errorf("%d file(s) not formatted; run `toolbox fmt`", len(unformatted)))
	}
	return nil
}

// writeAtomic replaces path with data atomically (internal/atomicfile),
// keeping path's permissions.
func writeAtomic(path string, data []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, st.Mode().Perm())
}
