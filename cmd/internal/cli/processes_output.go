package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// ProcessOutputOptions are the inputs of processes output.
type ProcessOutputOptions struct {
	DaemonOptions
	Process string
	// Cursor is the absolute byte position to read from.
	Cursor int64
	// Max bounds the page in bytes (0: 64 KiB, the most).
	Max int
}

// NewCmdProcessesOutput builds processes output; runF, when not nil,
// replaces its run.
func NewCmdProcessesOutput(g *Globals, runF func(*ProcessOutputOptions) error) *cobra.Command {
	opts := &ProcessOutputOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "output PROCESS",
		Short: "Print a page of a process's output from a byte cursor",
		Long: `output prints the process's output (stdout and stderr, in the order written)
from --cursor N, at most --max bytes (default and most 64 KiB), never
splitting a UTF-8 character. stderr then says the next cursor and the head
(the bytes written so far): pass the next cursor to read on. Reads are
stateless and the ring keeps the last 1 MiB: a cursor before it resumes at the
earliest byte kept, and says so; a cursor beyond the head is an error.
With --json, the page: {cursor, next, earliest, head, resumed, note,
chunks: [{stream, cursor, text}]}.`,
		Args: ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Process = args[0]
			if opts.Cursor < 0 || opts.Max < 0 {
				return &UsageError{Err: fmt.Errorf("--cursor and --max: want 0 or more")}
			}
			if runF != nil {
				return runF(opts)
			}
			return processOutputRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().Int64Var(&opts.Cursor, "cursor", 0, "the byte position to read from (a page's next cursor)")
	cmd.Flags().IntVar(&opts.Max, "max", 0, "at most this many bytes (default and most 65536)")
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

func processOutputRun(ctx context.Context, opts *ProcessOutputOptions) error {
	var pg supervisor.Page
	req := wire.Request{Op: wire.OpOutput, Process: opts.Process, Cursor: opts.Cursor, Max: opts.Max}
	if err := opts.call(ctx, req, &pg); err != nil {
		return err
	}
	if opts.JSON {
		return WriteJSON(opts.IO.Out, pg)
	}
	if _, err := io.WriteString(opts.IO.Out, pg.Text()); err != nil {
		return err
	}
	if pg.Note != "" {
		fmt.Fprintf(opts.IO.Err, "toolbox: %s\n", pg.Note)
	}
	if pg.Next < pg.Head {
		fmt.Fprintf(opts.IO.Err, "toolbox: bytes %d..%d of %d; more: --cursor %d\n", pg.Cursor, pg.Next, pg.Head, pg.Next)
	} else {
		fmt.Fprintf(opts.IO.Err, "toolbox: bytes %d..%d, at the head; next --cursor %d\n", pg.Cursor, pg.Next, pg.Next)
	}
	return nil
}

// ProcessTailOptions are the inputs of processes tail.
type ProcessTailOptions struct {
	DaemonOptions
	Process string
	// Bytes is how much of the end to print (0: 64 KiB, the most).
	Bytes int
}

// NewCmdProcessesTail builds processes tail; runF, when not nil, replaces
// its run.
func NewCmdProcessesTail(g *Globals, runF func(*ProcessTailOptions) error) *cobra.Command {
	opts := &ProcessTailOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "tail PROCESS",
		Short: "Print the end of a process's output",
		Long: `tail prints the last --bytes of the process's output (default and most 64 KiB),
starting on a character boundary. With --json, the page (see output).`,
		Args: ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Process = args[0]
			if opts.Bytes < 0 {
				return &UsageError{Err: fmt.Errorf("--bytes %d: want 0 or more", opts.Bytes)}
			}
			if runF != nil {
				return runF(opts)
			}
			return processTailRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Bytes, "bytes", 0, "print at most this many bytes of the end (default and most 65536)")
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

func processTailRun(ctx context.Context, opts *ProcessTailOptions) error {
	var pg supervisor.Page
	req := wire.Request{Op: wire.OpTail, Process: opts.Process, Bytes: opts.Bytes}
	if err := opts.call(ctx, req, &pg); err != nil {
		return err
	}
	if opts.JSON {
		return WriteJSON(opts.IO.Out, pg)
	}
	if pg.Note != "" {
		fmt.Fprintf(opts.IO.Err, "toolbox: %s\n", pg.Note)
	}
	_, err := io.WriteString(opts.IO.Out, pg.Text())
	return err
}
