package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// ProcessesCloseOptions are the inputs of processes close-session.
type ProcessesCloseOptions struct {
	DaemonOptions
}

// NewCmdProcessesCloseSession builds processes close-session; runF, when
// not nil, replaces its run.
func NewCmdProcessesCloseSession(g *Globals, runF func(*ProcessesCloseOptions) error) *cobra.Command {
	opts := &ProcessesCloseOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "close-session",
		Short: "Close the session: stop every process of it with its declared cancel, forget its records and mail",
		Long: `close-session ends the session (--session): every process of it is stopped
with its declared cancel (SIGKILL after its stop grace), then its records,
logs and mailbox are dropped. An agent runtime calls it when a conversation
ends, as MCP does when a connection closes.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return processesCloseRun(cmd.Context(), opts)
		},
	}
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

func processesCloseRun(ctx context.Context, opts *ProcessesCloseOptions) error {
	if err := opts.call(ctx, wire.Request{Op: wire.OpCloseSession}, nil); err != nil {
		return err
	}
	if opts.JSON {
		return WriteJSON(opts.IO.Out, map[string]any{"closed": true})
	}
	fmt.Fprintln(opts.IO.Err, "session closed: every process of it was stopped")
	return nil
}
