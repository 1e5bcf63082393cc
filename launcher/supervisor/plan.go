package supervisor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Ready kinds (process.ready.kind).
const (
	readyLine      = "line"
	readyExit      = "exit"
	readyImmediate = "immediate"
)

// On-exit policies (runtime.on_exit).
const (
	onExitReport  = "report"
	onExitRestart = "restart"
	onExitFail    = "fail"
)

// launchPlan is how to (re)launch one process.
type launchPlan struct {
	spec      *sandbox.Spec // nil: unconfined
	cmd       sandbox.Command
	stdin     []byte // written first (stdin-mode args)
	keepStdin bool   // stdin stays open for events

	framing      string         // output framing of events; "" = none
	outValidator EventValidator // jsonl output
	inFraming    string         // "" = reads no events
	inValidator  EventValidator
	readyKind    string
	readyRe      *regexp.Regexp

	startTimeout time.Duration
	stopGrace    time.Duration
	idle         time.Duration // 0 = none
	deadline     time.Duration // background command timeout; 0 = none
	cancelSig    syscall.Signal
	cancelSend   json.RawMessage
	onExit       string
	digest       protocol.Digest

	verify func() error // before a restart: the binary still matches the lock

	// redactor replaces the secret bound values of the tool's bindings
	// in its output as it arrives (before the ring, the log files, the
	// framer and so the events, mails and send answers see it) and in
	// reasons; nil when there are none.
	redactor *launcher.Redactor
	runtime  *Runtime // what the handle shows (runtime.go)
	// open opens the binary and checks it against the lock, before every
	// launch: the descriptor it returns is what runs (sandbox.Command.Exe).
	// nil when no locked binary runs (a background command).
	open func() (*sandbox.Executable, error)
}

// redact replaces the plan's secrets in s (a reason); a nil plan (a record
// of a dead supervisor) has none.
func (pl *launchPlan) redact(s string) string {
	if pl == nil {
		return s
	}
	return pl.redactor.String(s)
}

// command is cmd with the checked binary to run, and the function that
// releases it once the child started.
func (pl *launchPlan) command() (sandbox.Command, func(), error) {
	cmd := pl.cmd
	if pl.open == nil {
		return cmd, func() {}, nil
	}
	exe, err := pl.open()
	if err != nil {
		return cmd, nil, err
	}
	cmd.Exe = exe
	return cmd, func() { exe.Close() }, nil
}

// toolPlan is a resolved, verified, prepared tool of the lock.
type toolPlan struct {
	tool, backend, capability string
	mode                      string
	launchPlan
}

// planInput is what planTool needs.
type planInput struct {
	lock      *manifest.Lock
	lockPath  string
	name      string
	backends  map[string]string
	values    map[string]any
	callerEnv []string
	session   string
	compile   func(json.RawMessage) (EventValidator, error)
	timing    Timing
	self      identity // the supervisor's user, for the resolved runtime
	hidden    []string // directories hidden from the tool (the state dir)
	workspace runspec.Workspace
}

// planTool resolves the name, verifies the lock against the world, checks
// the tool may be started, validates and encodes the arguments, compiles
// the event schemas and prepares the command (runspec, verb "run"). Errors
// are the launcher's (*launcher.RefusedError, *launcher.ArgError) or wrap
// ErrNotStartable.
func planTool(in planInput) (*toolPlan, error) {
	if in.lock == nil {
		return nil, &launcher.RefusedError{What: "no lock", Fix: "run `toolbox lock`"}
	}
	tool, backend, err := launcher.Resolve(in.lock, in.name, in.backends)
	if err != nil {
		return nil, err
	}
	if err := launcher.Verify(in.lockPath, in.lock, tool); err != nil {
		return nil, err
	}
	t := in.lock.Tools[tool]
	if err := startable(tool, t); err != nil {
		return nil, err
	}
	args, ok := t.Describe.CommandArgs(t.Command)
	if !ok {
		return nil, &launcher.RefusedError{
			What: fmt.Sprintf("tool %q names command %q, which its describe document lacks", tool, t.Command),
			Fix:  "run `toolbox lock`",
		}
	}
	values := in.values
	if values == nil {
		values = map[string]any{}
	}
	// The operator's bindings win over the caller's values. A secret bound
	// value only reaches env or stdin (refused at lock for argv modes).
	values, secrets, err := launcher.Bind(tool, t, args, values, in.callerEnv)
	if err != nil {
		return nil, err
	}
	red := launcher.NewRedactor(append(secrets, runspec.ToolSecrets(filepath.Dir(in.lockPath), in.lock, tool)...))
	inv, err := protocol.Encode(args, values)
	if err != nil {
		return nil, red.Error(&launcher.ArgError{Tool: tool, Err: launcher.HideSecretArgs(t, err)})
	}
	d := t.Describe
	p := &toolPlan{tool: tool, backend: backend, mode: d.Mode()}
	if backend != "" {
		p.capability = in.name
	}
	if err := p.fromDescribe(tool, d, in.compile, in.timing); err != nil {
		return nil, red.Error(err)
	}
	p.redactor = red
	lockPath, lock := in.lockPath, in.lock
	p.verify = func() error { return launcher.Verify(lockPath, lock, tool) }
	p.open = func() (*sandbox.Executable, error) { return launcher.OpenVerified(lockPath, lock, tool) }
	spec, cmd, err := runspec.Prepare(filepath.Dir(in.lockPath), t, in.lock.EnvAllowlist, runspec.Params{
		Tool: tool, Verb: runspec.VerbRun, Argv: inv.Argv, ArgEnv: inv.Env,
		CallerEnv: in.callerEnv, Session: in.session,
		Trust: runspec.NewTrust(in.lockPath, in.lock, in.hidden...).WithWorkspace(in.workspace),
	})
	if err != nil {
		return nil, red.Error(err)
	}
	p.spec, p.cmd, p.stdin = spec, cmd, inv.Stdin
	p.cmd.Stdin = nil
	lockDir, _ := filepath.Abs(filepath.Dir(in.lockPath))
	cwd, _ := os.Getwd()
	p.runtime = toolRuntime(lockDir, t, spec, cmd, in.self, cwd)
	return p, nil
}

// startable refuses what the supervisor must not run: plugins, oneshot
// tools, and a tool declaring a sandbox or run_as that is locked with
// mechanism "none" (it is never run unconfined).
func startable(name string, t *manifest.Tool) error {
	if t.Kind != manifest.KindExec {
		return fmt.Errorf("tool %q is a %s tool, and the daemon starts exec tools only; run it with `toolbox run %s` (a stream's events print as they come): %w", name, t.Kind, name, ErrNotStartable)
	}
	d := t.Describe
	if m := d.Mode(); m != protocol.ProcessService && m != protocol.ProcessStream {
		return fmt.Errorf("tool %q is a %s tool, not a service or stream; run it with `toolbox run`: %w", name, m, ErrNotStartable)
	}
	if err := launcher.RefuseUnconfined(name, t); err != nil {
		return err
	}
	return nil
}

// fromDescribe reads the process and runtime declarations.
func (p *toolPlan) fromDescribe(tool string, d *protocol.Describe, compile func(json.RawMessage) (EventValidator, error), tm Timing) error {
	p.framing = d.Framing()
	p.readyKind = readyImmediate
	p.startTimeout = tm.StartTimeout
	p.stopGrace = tm.StopGrace
	p.cancelSig = syscall.SIGTERM
	p.onExit = onExitReport
	p.digest = protocol.Digest{Per: digestRound}
	if pr := d.Process; pr != nil {
		if pr.Output != nil && p.framing == protocol.FramingJSONL && len(bytes.TrimSpace(pr.Output.Event)) > 0 {
			v, err := compileEvent(tool, "output", pr.Output.Event, compile)
			if err != nil {
				return err
			}
			p.outValidator = v
		}
		if pr.Input != nil && p.mode == protocol.ProcessService {
			p.inFraming = pr.Input.Framing
			if p.inFraming == "" {
				p.inFraming = protocol.FramingJSONL
			}
			if len(bytes.TrimSpace(pr.Input.Event)) > 0 {
				v, err := compileEvent(tool, "input", pr.Input.Event, compile)
				if err != nil {
					return err
				}
				p.inValidator = v
			}
		}
		if r := pr.Ready; r != nil && r.Kind != "" {
			p.readyKind = r.Kind
			if r.Kind == readyLine {
				re, err := regexp.Compile(r.Match)
				if err != nil {
					return &launcher.RefusedError{What: fmt.Sprintf("process.ready.match of %q: %v", tool, err), Fix: "run `toolbox lock`"}
				}
				p.readyRe = re
			}
		}
		if pr.Digest != nil && pr.Digest.Per != "" {
			p.digest = *pr.Digest
		}
	}
	if rt := d.Runtime; rt != nil {
		if to := rt.Timeout; to != nil {
			if to.Start != nil && *to.Start > 0 {
				p.startTimeout = seconds(*to.Start)
			}
			if to.Stop != nil && *to.Stop >= 0 {
				p.stopGrace = seconds(*to.Stop)
			}
			if to.Idle != nil && *to.Idle > 0 {
				p.idle = seconds(*to.Idle)
			}
		}
		if rt.OnExit != "" {
			p.onExit = rt.OnExit
		}
		if c := rt.Cancel; c != nil {
			switch {
			case c.Signal == protocol.SignalInt:
				p.cancelSig = syscall.SIGINT
			case len(c.Send) > 0 && p.inFraming != "":
				p.cancelSend = c.Send
			}
		}
	}
	p.keepStdin = p.mode == protocol.ProcessService && p.inFraming != ""
	return nil
}

// compileEvent compiles a declared event schema. Without a compiler the
// tool is refused (launcher.ErrNeedsValidator): events are never left
// unchecked against a schema the tool declared.
func compileEvent(tool, which string, schema json.RawMessage, compile func(json.RawMessage) (EventValidator, error)) (EventValidator, error) {
	if compile == nil {
		return nil, fmt.Errorf("%q declares an %s event schema: %w", tool, which, launcher.ErrNeedsValidator)
	}
	v, err := compile(schema)
	if err != nil {
		return nil, &launcher.RefusedError{
			What: fmt.Sprintf("compiling the %s event schema of %q: %v", which, tool, err),
			Fix:  "run `toolbox lock`", Err: err,
		}
	}
	return v, nil
}

// seconds converts the describe document's seconds, capped so the
// conversion cannot overflow.
func seconds(s float64) time.Duration {
	const most = float64(400 * 24 * time.Hour)
	return time.Duration(min(s*float64(time.Second), most))
}
