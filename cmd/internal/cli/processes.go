package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// NewCmdProcesses builds `processes` and its subcommands, which manage the
// processes the daemon runs for the session.
func NewCmdProcesses(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "processes",
		Short: "List, inspect, read, stop and wait for the daemon's processes; run background commands",
		Long: `processes manages what toolbox serve runs for the session (--session, default
$TOOLBOX_SESSION, else "default"): services and stream tools started with
toolbox start, and background shell commands started with processes run.

A process is named by its id (p and six hex digits) or, for a background
command, by its --name. Output is kept per process in a 1 MiB ring addressed
by absolute byte cursors: read it page by page with output --cursor, where
each answer says the next cursor.

Every subcommand takes --json, which prints the daemon's answer: a status
object (process, tool, status, since, runtime {mechanism, user, uid, gid,
envdir, rundir}, session, kind, name, label, command, done, restarts,
exit_code, reason, pid, started, ended, output {earliest, head}, logs, stdout
and stderr {text, written, truncated}, events and event_count for a stream),
a list of them, or a page (cursor, next, earliest, head,
resumed, note, chunks [{stream, cursor, text}]). Errors under --json are
{"error": {"code", "message", "process"}} on stdout, exit 1.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &UsageError{Err: fmt.Errorf("unknown subcommand %q of processes", args[0])}
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(
		NewCmdProcessesList(g, nil),
		NewCmdProcessesStatus(g, nil),
		NewCmdProcessesOutput(g, nil),
		NewCmdProcessesTail(g, nil),
		NewCmdProcessesStop(g, nil),
		NewCmdProcessesWait(g, nil),
		NewCmdProcessesRun(g, nil),
		NewCmdProcessesCloseSession(g, nil),
	)
	return cmd
}

// ProcessesListOptions are the inputs of processes list.
type ProcessesListOptions struct {
	DaemonOptions
	// Now is the clock the STARTED column is measured from (time.Now when
	// nil).
	Now func() time.Time
}

// NewCmdProcessesList builds processes list; runF, when not nil, replaces
// its run.
func NewCmdProcessesList(g *Globals, runF func(*ProcessesListOptions) error) *cobra.Command {
	opts := &ProcessesListOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the session's processes, running and finished",
		Long: `list prints one line per process of the session, in start order: id, kind
(service, stream, command), tool, name, status, exit code, start time and
label (or command line). With --json, a list of status objects without tails.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return processesListRun(cmd.Context(), opts)
		},
	}
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

func processesListRun(ctx context.Context, opts *ProcessesListOptions) error {
	var list []supervisor.Status
	if err := opts.call(ctx, wire.Request{Op: wire.OpList}, &list); err != nil {
		return err
	}
	if opts.JSON {
		if list == nil {
			list = []supervisor.Status{}
		}
		return WriteJSON(opts.IO.Out, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(opts.IO.Err, "no processes in session %q\n", opts.SessionID())
		return nil
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	return printList(opts.IO.Out, list, now())
}

// ProcessStatusOptions are the inputs of processes status.
type ProcessStatusOptions struct {
	DaemonOptions
	Process string
	// Wait is how long to wait for the process to finish first (0: not at
	// all; at most supervisor.MaxWait).
	Wait time.Duration
}

// NewCmdProcessesStatus builds processes status; runF, when not nil,
// replaces its run.
func NewCmdProcessesStatus(g *Globals, runF func(*ProcessStatusOptions) error) *cobra.Command {
	opts := &ProcessStatusOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "status PROCESS",
		Short: "Show a process's status and the end of its output",
		Long: `status prints everything known about a process and the last 4 KiB of its
output, and the last 4 KiB of its stderr, each labelled (a stream tool shows its
last events instead of its stdout). --wait D first waits until it finishes or D
passes (a longer D is capped at 30s), so polling a command takes one call; it
is no error when it is still running. A process that finishes during the wait
is reported here only: its completion is not also mailed to the inbox.`,
		Args: ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Process = args[0]
			if err := capWait("--wait", &opts.Wait, opts.IO.Err); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return processStatusRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.Wait, "wait", 0, "wait up to this long for the process to finish, e.g. 10s (capped at 30s)")
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

// capWait refuses a negative inline wait and caps one over
// supervisor.MaxWait at MaxWait, as the seeds do ("capped at 30"), saying
// so on errw.
func capWait(flag string, d *time.Duration, errw io.Writer) error {
	switch {
	case *d < 0:
		return &UsageError{Err: fmt.Errorf("%s %s: want 0 or more (at most %s is waited)", flag, *d, supervisor.MaxWait)}
	case *d > supervisor.MaxWait:
		fmt.Fprintf(errw, "toolbox: %s %s is capped at %s (toolbox processes wait has no limit)\n", flag, *d, supervisor.MaxWait)
		*d = supervisor.MaxWait
	}
	return nil
}

func processStatusRun(ctx context.Context, opts *ProcessStatusOptions) error {
	var st supervisor.Status
	req := wire.Request{Op: wire.OpStatus, Process: opts.Process, WaitMS: wire.Millis(opts.Wait)}
	if err := opts.call(ctx, req, &st); err != nil {
		return err
	}
	if opts.JSON {
		return WriteJSON(opts.IO.Out, st)
	}
	printStatus(opts.IO.Out, st)
	return nil
}

// ProcessStopOptions are the inputs of processes stop.
type ProcessStopOptions struct {
	DaemonOptions
	Process string
	Force   bool
}

// NewCmdProcessesStop builds processes stop; runF, when not nil, replaces
// its run.
func NewCmdProcessesStop(g *Globals, runF func(*ProcessStopOptions) error) *cobra.Command {
	opts := &ProcessStopOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "stop PROCESS",
		Short: "Stop a process (its declared cancel, then SIGKILL) and print how it ended",
		Long: `stop sends the process's declared cancel (SIGTERM by default, SIGINT, or an
event on its stdin; SIGINT for a background command) to its process group, then
SIGKILL after its timeout.stop (a background command: after 5s), waits for it
to end, and prints its final state. --force sends SIGKILL at once.
Stopping a process that already finished is no error: it prints how it ended.`,
		Args: ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Process = args[0]
			if runF != nil {
				return runF(opts)
			}
			return processStopRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "SIGKILL the process group at once")
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

func processStopRun(ctx context.Context, opts *ProcessStopOptions) error {
	var st supervisor.Status
	req := wire.Request{Op: wire.OpStop, Process: opts.Process, Force: opts.Force}
	if err := opts.call(ctx, req, &st); err != nil {
		return err
	}
	if opts.JSON {
		return WriteJSON(opts.IO.Out, st)
	}
	fmt.Fprintln(opts.IO.Out, summaryLine(st))
	return nil
}

// ProcessWaitOptions are the inputs of processes wait.
type ProcessWaitOptions struct {
	DaemonOptions
	Process string
	// Timeout bounds the wait (0: until the process finishes).
	Timeout time.Duration
}

// NewCmdProcessesWait builds processes wait; runF, when not nil, replaces
// its run.
func NewCmdProcessesWait(g *Globals, runF func(*ProcessWaitOptions) error) *cobra.Command {
	opts := &ProcessWaitOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "wait PROCESS",
		Short: "Wait until a process finishes and print how it ended",
		Long: `wait blocks until the process finishes and prints its final state, then
exits as a shell's wait does: with the process's own exit code (128+N when
signal N ended it), 124 when it timed out, 1 when it was lost. With
--timeout D it gives up after D: it prints the current state and exits 1.`,
		Args: ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Process = args[0]
			if opts.Timeout < 0 {
				return &UsageError{Err: fmt.Errorf("--timeout %s: want 0 (none) or more", opts.Timeout)}
			}
			if runF != nil {
				return runF(opts)
			}
			return processWaitRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 0, "give up after this long, e.g. 2m (default: no limit)")
	addDaemonFlags(cmd, &opts.DaemonOptions)
	return cmd
}

func processWaitRun(ctx context.Context, opts *ProcessWaitOptions) error {
	var st supervisor.Status
	req := wire.Request{Op: wire.OpWait, Process: opts.Process, WaitMS: wire.Millis(opts.Timeout)}
	if err := opts.call(ctx, req, &st); err != nil {
		return err
	}
	if opts.JSON {
		if err := WriteJSON(opts.IO.Out, st); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(opts.IO.Out, summaryLine(st))
	}
	if !st.Done {
		if opts.JSON {
			return WithCode(ExitError, nil)
		}
		return fmt.Errorf("%s is still %s after %s", ref(st), st.Status, opts.Timeout)
	}
	return WithCode(finishedCode(st), nil)
}

// finishedCode is the exit code of `processes wait` for a finished process,
// as a shell's wait gives it: the process's own code when it exited, 124
// when it timed out, 1 when it was lost or stopped without a code.
func finishedCode(st supervisor.Status) int {
	switch {
	case st.Status == supervisor.StateTimedOut:
		return ExitTimeout
	case st.ExitCode != nil:
		return *st.ExitCode
	case st.Status == supervisor.StateExited:
		return 0
	}
	return ExitError
}
