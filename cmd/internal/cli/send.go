package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// SendOptions are the inputs of the send command.
type SendOptions struct {
	DaemonOptions
	Process string
	// Event is the event's JSON text, or "-" to read it from stdin.
	Event string
}

// NewCmdSend builds the send command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdSend(g *Globals, runF func(*SendOptions) error) *cobra.Command {
	opts := &SendOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "send PROCESS --event JSON",
		Short: "Send an event to a running service and print what it answered",
		Long: `send writes one event to a running service's stdin, after checking it against
the schema the tool declares for its input (process.input.event), and prints
the events the service emitted right after (within a short window), one JSON
line each, on stdout. When it emitted none, stdout is empty and stderr says
the event was accepted. --event - reads the event from stdin.

With --json: {"process", "status": "answered"|"accepted", "events": [...],
"elided"}, each event {"event": VALUE} or {"invalid": true, "raw", "error"}.`,
		Args: ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Process = args[0]
			if opts.Event == "" {
				return &UsageError{Err: errors.New("give the event with --event JSON (or --event - to read it from stdin)")}
			}
			if runF != nil {
				return runF(opts)
			}
			return sendRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Event, "event", "", "the event as JSON, or - to read it from stdin")
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

func sendRun(ctx context.Context, opts *SendOptions) error {
	raw := []byte(opts.Event)
	if opts.Event == "-" {
		b, err := inputfile.ReadAll(opts.IO.In, wire.MaxRequestBytes, "stdin") // the daemon takes no more
		if err != nil {
			return fmt.Errorf("reading the event from stdin: %w", err)
		}
		raw = bytes.TrimSpace(b)
	}
	if !json.Valid(raw) {
		return &UsageError{Err: fmt.Errorf("--event %q is not JSON; write e.g. '{\"action\":\"pause\"}'", raw)}
	}
	var res supervisor.SendResult
	req := wire.Request{Op: wire.OpSend, Process: opts.Process, Event: raw}
	if err := opts.call(ctx, req, &res); err != nil {
		return err
	}
	if opts.JSON {
		return WriteJSON(opts.IO.Out, res)
	}
	printEvents(opts.IO.Out, opts.IO.Err, res.Events)
	switch {
	case res.Status == supervisor.SendAccepted:
		fmt.Fprintf(opts.IO.Err, "accepted by %s (it emitted no event within the answer window)\n", res.Process)
	case res.Elided > 0:
		fmt.Fprintf(opts.IO.Err, "%d more events arrived in the window (see toolbox inbox)\n", res.Elided)
	}
	return nil
}
