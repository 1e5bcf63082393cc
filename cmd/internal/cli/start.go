package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// StartOptions are the inputs of the start command.
type StartOptions struct {
	DaemonOptions
	Name string
	CallInput
	// Environ is the environment the tool's is built from (os.Environ
	// when nil).
	Environ func() []string
}

// NewCmdStart builds the start command; runF, when not nil, replaces its
// run (tests check flag parsing with it).
func NewCmdStart(g *Globals, runF func(*StartOptions) error) *cobra.Command {
	opts := &StartOptions{DaemonOptions: DaemonOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "start NAME",
		Short: "Start a service or stream tool in the daemon and print its process id",
		Long: `start asks the daemon (toolbox serve) to start a service or stream tool, or a
capability's active backend, and returns once it is ready (its ready line,
exit or at once, as the tool declares, within its timeout.start). It prints
the process id on stdout, the handle and its resolved runtime (user, sandbox
mechanism, working directory, envdir) on stderr; with --json the handle
{process, tool, status, since, runtime {mechanism, user, uid, gid, envdir,
rundir}}.

Arguments are a JSON object: --args '{"path":"app.log"}', --args - to read it
from stdin, or --args-file FILE. The tool runs with this command's
environment (as the lock's rules allow) in the session of --session.

A start that does not become ready fails; the process's record stays, with its
output: toolbox processes output ID. Starting the same tool twice gives two
processes.`,
		Args: ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return startRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	opts.addFlags(f)
	addDaemonFlags(cmd, &opts.DaemonOptions)
	AddDaemonWorkspaceFlag(cmd, g)
	return cmd
}

func (o *StartOptions) environ() []string {
	if o.Environ != nil {
		return o.Environ()
	}
	return os.Environ()
}

func startRun(ctx context.Context, opts *StartOptions) error {
	backends, err := parseBackends(opts.Backends)
	if err != nil {
		return err
	}
	raw, err := opts.readArgs(opts.IO.In)
	if err != nil {
		return err
	}
	if !isJSONObject(raw) {
		return &UsageError{Err: errors.New("--args: want one JSON object, e.g. '{\"path\":\"app.log\"}'")}
	}
	ws, err := opts.chosenWorkspace()
	if err != nil {
		return err
	}
	req := wire.Request{
		Op: wire.OpStart, Tool: opts.Name, Args: raw, Backends: backends,
		CallerEnv: opts.environ(), Lock: opts.wantLock(),
		Workspace: ws.Dir, WorkspaceFrom: string(ws.From),
	}
	var h supervisor.Handle
	if err := opts.call(ctx, req, &h); err != nil {
		return err
	}
	if opts.JSON {
		return WriteJSON(opts.IO.Out, h)
	}
	fmt.Fprintln(opts.IO.Out, h.Process)
	fmt.Fprintf(opts.IO.Err, "%s is %s as process %s (since %s)\n", h.Tool, h.Status, h.Process, clock(h.Since))
	if h.Runtime != nil {
		fmt.Fprintf(opts.IO.Err, "runtime: %s\n", runtimeLine(h.Runtime))
	}
	return nil
}

// runtimeLine is a resolved runtime for a person: "user root (0:0),
// sandbox bwrap, in /srv/app, envdir /etc/toolbox/env/app".
func runtimeLine(rt *supervisor.Runtime) string {
	s := fmt.Sprintf("user %s (%d:%d), sandbox %s, in %s", rt.User, rt.UID, rt.GID, rt.Mechanism, rt.Rundir)
	if rt.Envdir != "" {
		s += ", envdir " + rt.Envdir
	}
	return s
}

// isJSONObject reports whether raw is one JSON object (the daemon checks
// the rest: duplicate keys, the tool's argument types).
func isJSONObject(raw []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// clock shows a time of the daemon's answers for a person: the local
// time of day, with the date when it is not today.
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	t = t.Local()
	if y, m, d := t.Date(); y == time.Now().Year() && m == time.Now().Month() && d == time.Now().Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}
