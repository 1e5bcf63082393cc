package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// InboxOptions are the inputs of the inbox command.
type InboxOptions struct {
	DaemonOptions
	// Cursor is the last mail already read (0: from the start).
	Cursor int64
	// Max bounds the mails printed (0: 100, the most).
	Max int
}

// NewCmdInbox builds the inbox command; runF, when not nil, replaces its
// run (tests check flag parsing with it).
func NewCmdInbox(g *Globals, runF func(*InboxOptions) error) *cobra.Command {
	opts := &InboxOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "inbox",
		Short: "Read the session's mail: service events and process completions",
		Long: `inbox prints the session's mail after --cursor (default: from the first):
digests of the events services emitted (kind "events", each event indented
below as one JSON line) and how processes ended (kind "exit", and "restart").
Reading consumes nothing: stderr says the cursor to pass next time. The daemon
keeps the last 1000 mails (4 MiB) of a session, in memory only.

With --json: {mails: [{seq, time, from, process, tool, name, label, kind,
events, elided, status, exit_code, reason, restarts}], next, earliest, more,
resumed, note}.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Cursor < 0 || opts.Max < 0 {
				return &UsageError{Err: fmt.Errorf("--cursor and --max: want 0 or more")}
			}
			if runF != nil {
				return runF(opts)
			}
			return inboxRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().Int64Var(&opts.Cursor, "cursor", 0, "print the mails after this one (the next cursor of the last read)")
	cmd.Flags().IntVar(&opts.Max, "max", 0, "at most this many mails (default and most 100)")
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

func inboxRun(ctx context.Context, opts *InboxOptions) error {
	var pg supervisor.InboxPage
	req := wire.Request{Op: wire.OpInbox, Cursor: opts.Cursor, Max: opts.Max}
	if err := opts.call(ctx, req, &pg); err != nil {
		return err
	}
	if opts.JSON {
		if pg.Mails == nil {
			pg.Mails = []supervisor.Mail{}
		}
		return WriteJSON(opts.IO.Out, pg)
	}
	if pg.Note != "" {
		fmt.Fprintf(opts.IO.Err, "toolbox: %s\n", pg.Note)
	}
	for _, m := range pg.Mails {
		printMail(opts.IO.Out, m)
	}
	switch {
	case len(pg.Mails) == 0:
		fmt.Fprintf(opts.IO.Err, "toolbox: no new mail; next --cursor %d\n", pg.Next)
	case pg.More:
		fmt.Fprintf(opts.IO.Err, "toolbox: more mail follows: --cursor %d\n", pg.Next)
	default:
		fmt.Fprintf(opts.IO.Err, "toolbox: next --cursor %d\n", pg.Next)
	}
	return nil
}
