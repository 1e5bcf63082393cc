package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// RunOptions are the inputs of the run command.
type RunOptions struct {
	*Globals
	Name string
	CallInput
	Timeout time.Duration
	JSON    bool
	Session string
	Keep    int
}

// NewCmdRun builds the run command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdRun(g *Globals, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Run a locked tool or capability once",
		Long: `run runs one tool, or a capability's active backend, exactly as the lock says.

Arguments are a JSON object: --args '{"path":"README.md"}', --args - to read it
from stdin, or --args-file FILE. The tool's stdout is printed exactly as the
tool printed it, its stderr passed through; the exit code is the tool's own,
124 on timeout, 125 when toolbox refused or failed before launch (stale lock,
bad arguments), 126 when the binary cannot be executed, 127 when it is missing.
SIGINT, SIGTERM or SIGHUP stop the tool as a timeout does (its declared cancel
signal, then SIGKILL after its timeout.stop) and exit 130, 143 or 129.
With --json, an envelope (tool, backend, exit_code, result or events, error) is
printed instead.`,
		Args:              ExactArgs(1),
		Annotations:       map[string]string{ArgsAnnotation: "the tool or capability to run (`toolbox list` shows the names)"},
		ValidArgsFunction: completeNames(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := opts.check(); err != nil {
				return err
			}
			if opts.Timeout < 0 || opts.Keep < 1 {
				return &UsageError{Err: fmt.Errorf("--timeout %s --keep %d: want a timeout of 0 (the default) or more and --keep of 1 or more", opts.Timeout, opts.Keep)}
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	opts.addFlags(f)
	f.DurationVar(&opts.Timeout, "timeout", 0, "call timeout, e.g. 30s (default: the tool's timeout in the toolbox file, else 2m)")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON envelope instead of the raw result")
	f.IntVar(&opts.Keep, "keep", launcher.DefaultKeepEvents, "stream tools: how many last events --json's envelope holds, the others counted in elided (without --json every event is printed as it arrives)")
	f.StringVar(&opts.Session, "session", os.Getenv("TOOLBOX_SESSION"), "session id passed to the tool as TOOLBOX_SESSION")
	AddWorkspaceFlag(cmd, g)
	return cmd
}

func parseBackends(list []string) (map[string]string, error) {
	m := map[string]string{}
	for _, s := range list {
		c, t, ok := strings.Cut(s, "=")
		if !ok || c == "" || t == "" {
			return nil, &UsageError{Err: fmt.Errorf("--backend %q: write capability=tool", s)}
		}
		m[c] = t
	}
	return m, nil
}

func runRun(ctx context.Context, opts *RunOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	backends, err := parseBackends(opts.Backends)
	if err != nil {
		return err
	}
	// Only what this call may run is read: a run costs the same whatever
	// else the toolbox holds (a binary of 1000 commands, say).
	lockPath, l, err := readLockWith(opts.Globals, func(path string) (*manifest.Lock, error) {
		return launcher.ReadLock(path, opts.Name, backends)
	})
	if err == nil {
		err = opts.CheckPlanted()
	}
	if err != nil {
		return opts.refused(err)
	}
	// Hand the call to toolbox-core before anything is consumed (stdin)
	// when this binary cannot run the tool as the lock says: its toolbox
	// file's bytes changed (only the HCL parser tells whether its
	// configuration did), or the tool needs a validator, the plugin host
	// or the MCP client.
	// The toolbox file is hashed once for the call: here, and Run reuses it.
	var tbFile *launcher.ToolboxFileCheck
	if opts.Delegate != nil {
		if tbFile = launcher.CheckToolboxFile(lockPath, l); tbFile.BytesChanged() {
			return opts.Delegate()
		}
		if tool, _, rerr := launcher.Resolve(l, opts.Name, backends); rerr == nil {
			candidates := []string{tool}
			if c := l.Capabilities[opts.Name]; c != nil && len(c.FallbackOn) > 0 {
				candidates = c.Backends // any of them may serve the call
			}
			for _, name := range candidates {
				needV, needP := launcher.NeedsHost(l.Tools[name])
				if needV && opts.CompileSchema == nil || needP && opts.Plugins == nil || launcher.NeedsMCP(l.Tools[name]) && opts.MCP == nil {
					return opts.Delegate()
				}
			}
		}
	}
	ws, err := opts.ChosenWorkspace()
	if err != nil {
		return err
	}
	raw, err := opts.readArgs(opts.IO.In)
	if err != nil {
		return opts.refused(err)
	}
	args, err := protocol.DecodeArgs(raw)
	if err != nil {
		return opts.refused(err)
	}
	if abs, aerr := filepath.Abs(lockPath); aerr == nil {
		lockPath = abs
	}
	req := launcher.Request{
		LockPath: lockPath, Lock: l, ToolboxFile: tbFile, Name: opts.Name, Backends: backends, Args: args,
		Timeout: opts.Timeout, CallerEnv: os.Environ(), Session: opts.Session, StateDir: opts.StateDirInUse(), Workspace: ws,
		CompileSchema: opts.CompileSchema, Plugins: opts.Plugins, MCP: opts.MCP, KeepEvents: opts.Keep,
	}
	if !opts.JSON {
		// What the tool prints is streamed, not kept: memory stays bounded
		// whatever it prints (DESIGN.md §5, output budget).
		req.Stdout, req.Stderr, req.StreamOnly = opts.IO.Out, opts.IO.Err, true
	}
	ctx, stopped := notifyStop(ctx)
	res, err := launcher.Run(ctx, req)
	sig := stopped()
	if err != nil && res == nil {
		if sig != 0 {
			return WithCode(128+int(sig), err)
		}
		return opts.refused(err)
	}
	if opts.JSON {
		if werr := writeEnvelope(opts.IO.Out, envelopeOf(opts.Name, res, err)); werr != nil {
			return werr
		}
	} else {
		if res.Message != "" {
			fmt.Fprintln(opts.IO.Out, res.Message)
		}
		for i, e := range res.Events { // kept: a stream's last, a fallback's buffered result
			if e.Invalid {
				fmt.Fprintf(opts.IO.Err, "toolbox: event %d is invalid: %s\n", res.Elided+i+1, e.Error)
			}
		}
		for _, e := range res.Invalid {
			fmt.Fprintf(opts.IO.Err, "toolbox: event %d is invalid: %s\n", e.N, e.Error)
		}
		if more := res.InvalidCount - len(res.Invalid); more > 0 {
			fmt.Fprintf(opts.IO.Err, "toolbox: %d more invalid events are not listed\n", more)
		}
		if err != nil {
			fmt.Fprintf(opts.IO.Err, "error: %v\n", err)
		}
		// A stream's events were all printed as they came: nothing to say.
		// A fallback capability's output was held until its backend was
		// chosen (launcher.Result.Tried is set only then), and only the
		// events kept were printed.
		if res.Elided > 0 && res.Tried != nil {
			fmt.Fprintf(opts.IO.Err, "toolbox: printed the last %d of %d events (a fallback capability's output is held until a backend serves it); --keep N holds more\n", len(res.Events), res.Elided+len(res.Events))
		}
		if res.TimedOut {
			fmt.Fprintf(opts.IO.Err, "error: %s timed out after %s and was stopped%s\n", res.Tool, res.Elapsed.Round(time.Millisecond), reasonSuffix(res.Reason))
		}
		if res.OutputCut {
			fmt.Fprintf(opts.IO.Err, "toolbox: note: %s\n", launcher.OutputCutNote)
		}
		if sig != 0 {
			fmt.Fprintf(opts.IO.Err, "toolbox: %s stopped by %s\n", res.Tool, unix.SignalName(sig))
		}
	}
	if sig != 0 {
		return WithCode(128+int(sig), nil)
	}
	code := res.ExitCode
	if res.TimedOut {
		code = ExitTimeout
	}
	if code == 0 && err != nil {
		code = ExitError
	}
	return WithCode(code, nil)
}

// refused reports an error before launch with the exit code of DESIGN.md §7.
func (o *RunOptions) refused(err error) error {
	code := launcher.ExitCode(err)
	if o.JSON {
		if werr := writeEnvelope(o.IO.Out, envelopeOf(o.Name, nil, err)); werr != nil {
			return werr
		}
		return WithCode(code, nil)
	}
	return WithCode(code, err)
}

// envelope is the stable --json output of run: tool (the name called),
// backend and capability, exit_code, timed_out, then the result as one of
// result (text, or base64 with result_encoding), events (jsonl; for a
// stream tool the last --keep, with elided counting the others) or lines,
// media_type, truncated, output_cut (launcher.Result.OutputCut), error
// {message, stderr_tail}, elapsed_ms.
type envelope struct {
	Tool           string           `json:"tool"`
	Backend        string           `json:"backend,omitempty"`
	Capability     string           `json:"capability,omitempty"`
	ExitCode       int              `json:"exit_code"`
	TimedOut       bool             `json:"timed_out,omitempty"`
	Result         *string          `json:"result,omitempty"`
	ResultEncoding string           `json:"result_encoding,omitempty"`
	MediaType      string           `json:"media_type,omitempty"`
	Truncated      bool             `json:"truncated,omitempty"`
	Events         []launcher.Event `json:"events,omitempty"`
	Elided         int              `json:"elided,omitempty"`
	Tried          []string         `json:"tried,omitempty"`
	Lines          []string         `json:"lines,omitempty"`
	OutputCut      bool             `json:"output_cut,omitempty"`
	Error          *envelopeError   `json:"error,omitempty"`
	ElapsedMS      int64            `json:"elapsed_ms"`
}

type envelopeError struct {
	Message    string `json:"message"`
	StderrTail string `json:"stderr_tail,omitempty"`
}

func envelopeOf(name string, res *launcher.Result, err error) envelope {
	env := envelope{Tool: name}
	if res == nil {
		env.ExitCode = launcher.ExitCode(err)
		env.Error = &envelopeError{Message: err.Error()}
		return env
	}
	env.Tool, env.Backend, env.Capability = res.Tool, res.Backend, res.Capability
	env.ExitCode, env.TimedOut, env.MediaType, env.Truncated = res.ExitCode, res.TimedOut, res.MediaType, res.Truncated
	env.ElapsedMS = res.Elapsed.Milliseconds()
	env.Events, env.Lines, env.Elided, env.Tried = res.Events, res.Lines, res.Elided, res.Tried
	env.OutputCut = res.OutputCut
	switch {
	case res.Message != "":
		env.Result = &res.Message
	case res.Events == nil && res.Lines == nil:
		s := string(res.Output)
		if res.Binary {
			s = base64.StdEncoding.EncodeToString(res.Output)
			env.ResultEncoding = "base64"
		}
		env.Result = &s
	}
	if res.TimedOut {
		env.ExitCode = ExitTimeout
		env.Error = &envelopeError{Message: fmt.Sprintf("timed out after %s%s", res.Elapsed.Round(time.Millisecond), reasonSuffix(res.Reason)), StderrTail: res.StderrTail}
	} else if res.ExitCode != 0 {
		env.Error = &envelopeError{Message: fmt.Sprintf("%s exited with code %d", res.Tool, res.ExitCode), StderrTail: res.StderrTail}
	}
	if err != nil {
		env.Error = &envelopeError{Message: err.Error(), StderrTail: res.StderrTail}
	}
	return env
}

// reasonSuffix is ": " and why a run was stopped, or "" when it is only
// its call timeout.
func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
