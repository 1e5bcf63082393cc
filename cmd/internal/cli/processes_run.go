package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// ProcessRunOptions are the inputs of processes run.
type ProcessRunOptions struct {
	DaemonOptions
	Cmd   string
	Name  string
	Label string
	// Cwd is the working directory: absolute, or relative to the call's
	// workspace; "" for the workspace itself (DESIGN.md §7). The daemon
	// resolves it (supervisor.Command.Cwd), not this command.
	Cwd string
	// Env are K=V additions to the environment.
	Env     []string
	Timeout time.Duration
	// Wait is the inline wait (0: answer at once).
	Wait time.Duration
	// Environ reads this command's environment (os.Environ when nil).
	Environ func() []string
}

// NewCmdProcessesRun builds processes run; runF, when not nil, replaces
// its run.
func NewCmdProcessesRun(g *Globals, runF func(*ProcessRunOptions) error) *cobra.Command {
	opts := &ProcessRunOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "run 'COMMAND'",
		Short: "Run a shell command in the background of the daemon, waiting for it a little",
		Long: `run starts a shell command (bash -c) in the daemon, in the workspace
(--workspace, else $TOOLBOX_WORKSPACE, else the daemon's) or in --cwd DIR
(relative to the workspace, or absolute: a call without a usable workspace
takes an absolute one only), with this command's environment
plus --env K=V, and waits for it up to --wait (default 3s; a longer wait is
capped at 30s; 0 answers at once). It prints the last 4 KiB of the command's
stdout on stdout, the last 4 KiB of its stderr and how it stands on stderr:
its final state when it finished in time (its completion is then not also
mailed to the inbox), else "running" and how to follow it (processes status
--wait, output, wait). Exit 0 either way; the state line gives the command's
own exit code. With --json, its status object, stdout and stderr tails
included.

Background commands are off unless the toolbox file declares builtin
"process": they run in its sandbox (its paths only, a filtered environment,
no network when it says net = "none"; --cwd must lie inside its paths, and
without --cwd a workspace outside them gives way to the first writable
one), or, when it says unconfined = true, unsandboxed as the daemon's user,
exactly as powerful as a shell. --name (a-z, 0-9 and '-', at most 63) lets
other commands address it; a name is refused while its process runs and
reusable once it finished. --timeout stops it after that long, as processes
stop does: SIGINT to its process group, then SIGKILL after a grace.`,
		Args: ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Cmd = args[0]
			if err := capWait("--wait", &opts.Wait, opts.IO.Err); err != nil {
				return err
			}
			if opts.Timeout < 0 {
				return &UsageError{Err: fmt.Errorf("--timeout %s: want 0 (none) or more", opts.Timeout)}
			}
			if runF != nil {
				return runF(opts)
			}
			return processRunRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Name, "name", "", "a name to address the process by ([a-z0-9-], at most 63)")
	f.StringVar(&opts.Label, "label", "", "free text shown in lists")
	f.StringVar(&opts.Cwd, "cwd", "", "the working directory, relative to the workspace (default: the workspace)")
	f.StringArrayVar(&opts.Env, "env", nil, "K=V: add a variable to the environment (repeatable)")
	f.DurationVar(&opts.Timeout, "timeout", 0, "stop the command after this long, e.g. 10m (default: no limit)")
	f.DurationVar(&opts.Wait, "wait", supervisor.DefaultWait, "wait up to this long for it to finish (0 answers at once; capped at 30s)")
	addDaemonFlags(cmd, &opts.DaemonOptions)
	AddDaemonWorkspaceFlag(cmd, g)
	return cmd
}

// parseEnv turns K=V flags into a map.
func parseEnv(list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, &UsageError{Err: fmt.Errorf("--env %q: write NAME=VALUE", kv)}
		}
		m[k] = v
	}
	return m, nil
}

func processRunRun(ctx context.Context, opts *ProcessRunOptions) error {
	env, err := parseEnv(opts.Env)
	if err != nil {
		return err
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ
	}
	wait := wire.Millis(opts.Wait)
	if wait == 0 {
		wait = -1 // the wire's "answer at once"; 0 there is the default
	}
	ws, err := opts.chosenWorkspace()
	if err != nil {
		return err
	}
	req := wire.Request{
		Op: wire.OpRunCommand, CallerEnv: environ(), WaitMS: wait, Lock: opts.wantLock(),
		Command:   &wire.Command{Cmd: opts.Cmd, Name: opts.Name, Label: opts.Label, Cwd: opts.Cwd, Env: env, TimeoutMS: wire.Millis(opts.Timeout)},
		Workspace: ws.Dir, WorkspaceFrom: string(ws.From),
	}
	var st supervisor.Status
	if err := opts.call(ctx, req, &st); err != nil {
		return err
	}
	if opts.JSON {
		return WriteJSON(opts.IO.Out, st)
	}
	// The command's stdout tail goes to stdout, its stderr tail to stderr.
	cut := false
	if t := st.Stdout; t != nil {
		if _, err := io.WriteString(opts.IO.Out, t.Text); err != nil {
			return err
		}
		cut = t.Truncated
	}
	if t := st.Stderr; t != nil {
		io.WriteString(opts.IO.Err, t.Text)
		cut = cut || t.Truncated
	}
	if cut {
		fmt.Fprintf(opts.IO.Err, "toolbox: only the last %d bytes of each stream are shown: toolbox processes output %s --cursor %d\n", supervisor.TailBytes, st.Process, st.Output.Earliest)
	}
	fmt.Fprintln(opts.IO.Err, summaryLine(st))
	if !st.Done {
		fmt.Fprintf(opts.IO.Err, "toolbox: follow it with: toolbox processes status %s --wait 30s (or output, wait, stop)\n", st.Process)
	}
	return nil
}
