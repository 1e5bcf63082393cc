package launcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Request is one call of a locked tool.
type Request struct {
	// LockPath is the absolute path of toolbox.lock.json; paths in the lock
	// are relative to its directory.
	LockPath string
	// Lock is the lock at LockPath, already read by the caller
	// (manifest.Read). nil is refused.
	Lock *manifest.Lock
	// ToolboxFile is the check of the lock's toolbox file the caller
	// already made for this call (CheckToolboxFile on LockPath and Lock);
	// nil, or one made for another lock, and Run makes its own. Either
	// way the file is hashed once per call, whatever the backends tried.
	ToolboxFile *ToolboxFileCheck
	// Name is a tool or a capability name.
	Name string
	// Backends are --backend overrides, capability name → tool name (see
	// Resolve). nil for none.
	Backends map[string]string
	// Args are the argument values, a decoded JSON object
	// (protocol.DecodeArgs). nil means no arguments.
	Args map[string]any
	// Timeout is the call timeout; 0 means the operator's default for the
	// tool (the lock's runtime.timeout_seconds), else DefaultTimeout.
	Timeout time.Duration
	// Stdout, when non-nil, receives the tool's stdout as it arrives,
	// exactly as the tool printed it (plain CLI output); Result.Output then
	// stays nil. jsonl events and lines are still parsed into the Result,
	// unless StreamOnly is set.
	Stdout io.Writer
	// StreamOnly, with Stdout set, keeps no copy of what reached Stdout:
	// Events and Lines stay nil, each jsonl line is still checked and the
	// first MaxInvalidReports invalid ones reported in Result.Invalid. The
	// memory of the call is then bounded by one line (at most the budget)
	// whatever the tool prints. A stream tool still keeps its last
	// KeepEvents events (within the budget).
	StreamOnly bool
	// MaxResultBytes is the output budget (0 means MaxResultBytes): what
	// the Result keeps of stdout, counted as its JSON text plus
	// EventOverheadBytes per event or line.
	MaxResultBytes int
	// Stderr, when non-nil, receives the tool's stderr live. Its tail is
	// kept in Result.StderrTail either way.
	Stderr io.Writer
	// CallerEnv is the caller's environment (os.Environ()); what of it the
	// tool sees is runspec's rule (DESIGN.md §2).
	CallerEnv []string
	// Session is the TOOLBOX_SESSION value; "" for none.
	Session string
	// StateDir is the state directory the caller uses ("" for none): no
	// sandboxed tool may reach it (runspec.NewTrust).
	StateDir string
	// Hidden are more host paths no sandboxed tool may reach: the
	// operator's --mcp-token-file of toolbox serve.
	Hidden []string
	// Workspace is the caller's choice of workspace (--workspace or
	// $TOOLBOX_WORKSPACE, runspec.ChooseWorkspace); the zero value takes
	// the toolbox file's default, else the current directory. It is
	// resolved for this call (runspec.Trust.WithWorkspace): a tool naming
	// the workspace is refused when it cannot be used.
	Workspace runspec.Workspace
	// KeepEvents is how many of a stream tool's last events the Result
	// keeps (0 = DefaultKeepEvents); the others are counted in Elided.
	// Every event still reaches Stdout as it arrives.
	KeepEvents int
	// CompileSchema compiles a tool's declared output event schema
	// (validate.CompileEventSchema). It is injected so that this package
	// does not link a JSON Schema library: nil makes Run refuse a jsonl tool
	// that declares an event schema with ErrNeedsValidator, before launch.
	CompileSchema func(schema json.RawMessage) (EventValidator, error)
	// Plugins runs plugin tools (package launcher/pluginrun). It is
	// injected for the same reason: nil makes Run refuse a plugin tool with
	// ErrNeedsPlugin, before launch.
	Plugins PluginRunner
	// MCP calls tools served by MCP servers (package launcher/mcprun);
	// nil makes Run refuse such a tool with ErrNeedsMCP, before launch.
	// Their arguments are validated with CompileSchema.
	MCP MCPRunner
}

// DefaultKeepEvents is how many last events of a stream tool a Result
// keeps when the Request does not say.
const DefaultKeepEvents = 100

// EventValidator validates one jsonl line against a compiled event schema;
// the error says why the line is invalid. *validate.EventValidator is one.
// It must be safe for concurrent use: a stream's lines are validated on
// several goroutines at once (output_parallel.go).
type EventValidator interface {
	Validate(line []byte) (any, error)
}

// Result is how a tool that ran ended. Exactly one of Output (raw and
// chunks framing, when not streamed), Events (jsonl) or Lines (lines) holds
// the result; Message replaces an exactly empty stdout.
type Result struct {
	// Tool is the locked tool that ran.
	Tool string `json:"tool"`
	// Backend is the backend chosen when Request.Name was a capability
	// (equal to Tool), "" when it named the tool itself.
	Backend string `json:"backend,omitempty"`
	// Capability is Request.Name when it was a capability, else "".
	Capability string `json:"capability,omitempty"`
	// ExitCode is the tool's exit code; 128+N when a signal N killed it;
	// ExitTimeout (124) when the call timed out.
	ExitCode int `json:"exit_code"`
	// TimedOut says the call timeout (or the context's deadline) expired
	// and the tool was stopped.
	TimedOut bool `json:"timed_out,omitempty"`
	// Canceled says the context was canceled and the tool was stopped.
	// ExitCode is then what the stopped tool exited with.
	Canceled bool `json:"canceled,omitempty"`
	// Reason says why a run that timed out for another cause than its
	// call timeout was stopped: a stream tool silent for its
	// runtime.timeout.idle (idle.go).
	Reason string `json:"reason,omitempty"`
	// Framing is the output framing: FramingRaw ("", v1),
	// protocol.FramingJSONL, FramingLines or FramingChunks.
	Framing string `json:"framing,omitempty"`
	// Output is stdout for raw and chunks framing, nil when it was
	// streamed to Request.Stdout.
	Output []byte `json:"output,omitempty"`
	// StdoutBytes counts every byte the tool wrote to stdout.
	StdoutBytes int64 `json:"stdout_bytes"`
	// Truncated says stdout went over the output budget (MaxResultBytes,
	// or Request.MaxResultBytes) and only what fitted was kept: the first
	// bytes, or the first whole events and lines (a stream tool's last).
	Truncated bool `json:"truncated,omitempty"`
	// Binary says stdout was not UTF-8.
	Binary bool `json:"binary,omitempty"`
	// MediaType is the declared output-media-type; for binary output
	// without one, application/octet-stream.
	MediaType string `json:"media_type,omitempty"`
	// Message is the empty-result AddMessage text, set when stdout was
	// exactly empty and the tool exited 0.
	Message string `json:"message,omitempty"`
	// Events are the jsonl lines in order (blank lines skipped); for a
	// stream tool only the last Request.KeepEvents of them.
	Events []Event `json:"events,omitempty"`
	// Elided counts the events of a stream tool left out of Events.
	Elided int `json:"elided,omitempty"`
	// Tried lists the backends tried, in order, when the capability
	// declares fallback_on (the last one served); nil otherwise.
	Tried []string `json:"tried,omitempty"`
	// Lines are the stdout lines without their "\n".
	Lines []string `json:"lines,omitempty"`
	// OutputCut says a process outside the tool's tree (one the tool handed
	// its stdout or stderr to) still held it open after the tool exited:
	// everything the tool wrote before it exited is here, what was written
	// after that may be missing (sandbox.Process.OutputCut). Front-ends
	// show it as a note.
	OutputCut bool `json:"output_cut,omitempty"`
	// Invalid reports the first invalid jsonl lines of a StreamOnly call
	// (whose Events stay nil); InvalidCount counts them all.
	Invalid      []InvalidEvent `json:"invalid,omitempty"`
	InvalidCount int            `json:"invalid_count,omitempty"`
	// StderrTail is the last StderrTailBytes of stderr.
	StderrTail string `json:"stderr_tail,omitempty"`
	// MCPResult is the answer of an MCP tool's server, the CallToolResult
	// as JSON, for the MCP front-end to pass on; nil for other tools, and
	// when it is over the output budget (then Output, truncated, is all).
	MCPResult json.RawMessage `json:"-"`
	// Elapsed is the wall time from start to exit.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// OutputCutNote is the note front-ends show for Result.OutputCut.
const OutputCutNote = "a process outside the tool's tree still held its output open after the tool exited; anything written after the exit may be missing"

// Event is one jsonl output line: Event when it is valid, else Invalid with
// the Raw line and the validation Error. Invalid lines are never dropped.
type Event struct {
	Event   json.RawMessage `json:"event,omitempty"`
	Invalid bool            `json:"invalid,omitempty"`
	Raw     string          `json:"raw,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// Run resolves, verifies and runs one call (see the package doc). A
// service tool is refused (it is started, not called); a stream tool is
// run to its end like a oneshot, its events collected in the Result. Errors
// before launch are *RefusedError, *ArgError, or wrap ErrNotFound or
// ErrNotExecutable (ExitCode maps them). A tool that ran returns a Result
// and a nil error whatever its exit code; a non-nil error with a Result
// means the run happened but writing to Request.Stdout or waiting failed.
func Run(ctx context.Context, req Request) (*Result, error) {
	toolName, backend, err := Resolve(req.Lock, req.Name, req.Backends)
	if err != nil {
		return nil, err
	}
	if !req.ToolboxFile.isFor(req.LockPath, req.Lock) {
		req.ToolboxFile = newToolboxFileCheck(req.LockPath, req.Lock)
	}
	if c := req.Lock.Capabilities[req.Name]; backend != "" && c != nil && len(c.FallbackOn) > 0 {
		return runFallback(ctx, req, c, toolName)
	}
	return runTool(ctx, req, toolName, backend)
}

// runFallback runs a capability that declares fallback_on: when a backend
// exits with one of those codes, the next usable backend (lock order, ok
// before unverified) is tried. Output is buffered per attempt, so only the
// serving backend's output reaches req.Stdout; Result.Tried lists every
// backend tried. Errors before launch end the call as they are.
func runFallback(ctx context.Context, req Request, c *manifest.Capability, first string) (*Result, error) {
	order := []string{first}
	for _, b := range c.UsableBackends(req.Lock.Tools) {
		if b != first {
			order = append(order, b)
		}
	}
	stdout := req.Stdout
	req.Stdout, req.StreamOnly = nil, false // buffered: written once served
	var tried []string
	for i, b := range order {
		res, err := runTool(ctx, req, b, b)
		tried = append(tried, b)
		if res == nil {
			return nil, err
		}
		if slices.Contains(c.FallbackOn, res.ExitCode) && !res.TimedOut && i < len(order)-1 && ctx.Err() == nil {
			continue
		}
		res.Tried = tried
		if stdout != nil && err == nil {
			err = writeResult(stdout, res)
		}
		return res, err
	}
	return nil, errors.New("unreachable")
}

// writeResult prints a buffered Result as plain output would have: the
// bytes, the jsonl lines, or the lines.
func writeResult(w io.Writer, r *Result) error {
	var b bytes.Buffer
	b.Write(r.Output)
	for _, e := range r.Events {
		if e.Event != nil {
			b.Write(e.Event)
		} else {
			b.WriteString(e.Raw)
		}
		b.WriteByte('\n')
	}
	for _, l := range r.Lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

// runTool runs one locked tool: verify, bind and encode the arguments,
// prepare the runtime and execute it.
func runTool(ctx context.Context, req Request, toolName, backend string) (*Result, error) {
	var err error
	t := req.Lock.Tools[toolName]
	if t != nil {
		// What the sandbox will need (its seccomp filter) is built while
		// the lock is verified and the arguments encoded.
		sandbox.Prefetch(prefetchSpec(t))
	}
	var exe *sandbox.Executable
	switch {
	case t != nil && t.Kind == manifest.KindPlugin && verifiesAtStart(req.Plugins):
		// The runner opens and hashes the binary when it starts a
		// process (PluginCall.Open), and reuses verified processes.
		err = verifyLock(req.LockPath, req.Lock, toolName, req.ToolboxFile)
	case t != nil && t.Kind == manifest.KindMCP:
		// The MCP runner opens and hashes the server's executable each
		// time it starts the server (OpenMCPServer), warm or per call.
		err = verifyLock(req.LockPath, req.Lock, toolName, req.ToolboxFile)
	default:
		exe, err = openVerified(req.LockPath, req.Lock, toolName, req.ToolboxFile)
	}
	if err != nil {
		return nil, err
	}
	defer exe.Close()
	if afterVerify != nil && exe != nil {
		afterVerify(exe.Path())
	}
	if t.Kind == manifest.KindMCP {
		return runMCP(ctx, req, toolName, backend, t)
	}
	if err := runnable(toolName, t, req.Plugins); err != nil {
		return nil, err
	}
	args, err := toolArgs(toolName, t)
	if err != nil {
		return nil, err
	}
	values := req.Args
	if values == nil {
		values = map[string]any{}
	}
	values, secrets, err := Bind(toolName, t, args, values, req.CallerEnv)
	if err != nil {
		return nil, err
	}
	red := NewRedactor(append(secrets, runspec.ToolSecrets(filepath.Dir(req.LockPath), req.Lock, toolName)...))
	// Argument errors name what the caller called: the capability, whose
	// args every backend shares, or the tool.
	called := toolName
	if backend != "" {
		called = req.Name
	}
	if err := protocol.ValidateArgs(args, values); err != nil {
		return nil, red.Error(&ArgError{Tool: called, Err: HideSecretArgs(t, err)})
	}
	inv, err := protocol.Encode(args, values)
	if err != nil {
		return nil, red.Error(&ArgError{Tool: called, Err: HideSecretArgs(t, err)})
	}
	framing := t.Describe.Framing()
	var validator EventValidator
	if framing == protocol.FramingJSONL {
		if schema := outputSchema(t.Describe); len(schema) > 0 {
			if req.CompileSchema == nil {
				return nil, fmt.Errorf("%q declares an output event schema: %w", toolName, ErrNeedsValidator)
			}
			if validator, err = req.CompileSchema(schema); err != nil {
				return nil, &RefusedError{
					What: fmt.Sprintf("compiling the output event schema of %q: %v", toolName, err),
					Fix:  relockFix, Err: err,
				}
			}
		}
	}
	// runspec puts the verb and, for one command of a multi-command binary,
	// the command's name before the encoded arguments.
	spec, cmd, err := runspec.Prepare(filepath.Dir(req.LockPath), t, req.Lock.EnvAllowlist, runspec.Params{
		Tool: toolName, Verb: runspec.VerbRun, Argv: inv.Argv, ArgEnv: inv.Env, Stdin: inv.Stdin,
		CallerEnv: req.CallerEnv, Session: req.Session,
		Trust: runspec.NewTrust(req.LockPath, req.Lock, append([]string{req.StateDir}, req.Hidden...)...).WithWorkspace(req.Workspace),
	})
	if err != nil {
		return nil, red.Error(named(toolName, err)) // it names the tool and the fix
	}
	cmd.Exe = exe
	o := execOptions{
		framing: framing, validator: validator,
		timeout: callTimeout(req.Timeout, t), stop: stopFor(t.Describe),
		stdout: req.Stdout, stderr: req.Stderr,
		emptyResult: t.Describe.EmptyResult, mediaType: t.Describe.OutputMediaType,
		redactor: red, limit: req.MaxResultBytes, streamOnly: req.StreamOnly && req.Stdout != nil,
	}
	if t.Describe.Mode() == protocol.ProcessStream {
		o.keepEvents = req.KeepEvents
		if o.keepEvents <= 0 {
			o.keepEvents = DefaultKeepEvents
		}
		if t.Kind == manifest.KindExec {
			o.idle = idleFor(t.Describe)
		}
		o.streamOnly = false
	}
	var res *Result
	if t.Kind == manifest.KindPlugin {
		lockPath, lock := req.LockPath, req.Lock
		res, err = executePlugin(ctx, req.Plugins, PluginCall{
			Tool: toolName, Path: cmd.Path, Exe: exe, Spec: spec, Env: cmd.Env, Dir: cmd.Dir, Command: t.Command, Args: values,
			Verify:      func() error { return VerifyBinary(lockPath, lock, toolName) },
			Open:        func() (*sandbox.Executable, error) { return OpenBinary(lockPath, lock, toolName) },
			Concurrency: t.Runtime.Concurrency, SHA256: t.SHA256,
		}, o)
	} else {
		res, err = execute(ctx, spec, cmd, o)
	}
	if res == nil {
		return nil, red.Error(named(toolName, err)) // it never started
	}
	res.Tool, res.Backend = toolName, backend
	if backend != "" {
		res.Capability = req.Name
	}
	return res, red.Error(err)
}

// afterVerify, when set (by tests), runs between the check of the binary
// and its start: the window a swap would use.
var afterVerify func(path string)

// named reports a sandbox refusal (which cannot know the tool's name) as
// a *RefusedError naming the tool and carrying the refusal's fix; other
// errors are returned as they are. errors.As still finds the refusal.
func named(tool string, err error) error {
	var r *sandbox.RefusalError
	if !errors.As(err, &r) {
		return err
	}
	if r.Tool == "" {
		r.Tool = tool
	}
	return &RefusedError{What: r.Error(), Fix: r.Fix, Err: r}
}

// prefetchSpec is as much of t's sandbox spec as sandbox.Prefetch needs:
// the mechanism, the network, the identity, and the unix sockets a plugin
// gets. runspec builds the whole spec later.
func prefetchSpec(t *manifest.Tool) *sandbox.Spec {
	s := &sandbox.Spec{Mechanism: sandbox.Mechanism(t.Runtime.Mechanism)}
	if d := t.Describe; d != nil && d.Runtime != nil && d.Runtime.Sandbox != nil {
		s.NetNone = d.Runtime.Sandbox.Net == "none"
	}
	if id := t.Runtime.RunAs; id != nil {
		s.RunAs = &sandbox.Identity{UID: id.UID, GID: id.GID}
	}
	s.UnixSockets = t.Kind == manifest.KindPlugin && s.Mechanism != sandbox.None && s.Mechanism != ""
	return s
}

// runnable refuses what this launcher must not run.
func runnable(name string, t *manifest.Tool, plugins PluginRunner) error {
	switch {
	case t.Kind == manifest.KindPlugin && plugins == nil:
		return fmt.Errorf("%q is a plugin tool: %w", name, ErrNeedsPlugin)
	case t.Kind != manifest.KindExec && t.Kind != manifest.KindPlugin:
		return &RefusedError{
			What: fmt.Sprintf("tool %q is of unknown kind %q", name, t.Kind),
			Fix:  relockFix,
		}
	}
	d := t.Describe
	if d.Mode() == protocol.ProcessService {
		return &RefusedError{
			What: fmt.Sprintf("tool %q is a service, not a oneshot", name),
			Fix:  "start it with `toolbox start`",
		}
	}
	return RefuseUnconfined(name, t)
}

// RefuseUnconfined refuses a tool that declares runtime.sandbox or run_as
// but is locked with mechanism none (a lock written by hand or by another
// program): such a tool is never run unconfined. It returns a
// *RefusedError naming the field, or nil.
func RefuseUnconfined(name string, t *manifest.Tool) error {
	d := t.Describe
	if m := t.Runtime.Mechanism; (m == "" || m == string(sandbox.None)) && d != nil && d.Runtime != nil {
		var field string
		switch {
		case d.Runtime.Sandbox != nil:
			field = "runtime.sandbox"
		case d.Runtime.RunAs != nil:
			field = "runtime.run_as"
		}
		if field != "" {
			return &RefusedError{
				What: fmt.Sprintf("tool %q declares %s but is locked with sandbox mechanism %q; it is never run unconfined", name, field, "none"),
				Fix:  "set sandbox = \"auto\" (or bwrap, landlock) in the toolbox file and run `toolbox lock`",
			}
		}
	}
	return nil
}

// toolArgs returns the declared args: the command's for one command of a
// multi-command binary.
func toolArgs(name string, t *manifest.Tool) ([]protocol.Arg, error) {
	args, ok := t.Describe.CommandArgs(t.Command)
	if !ok {
		return nil, &RefusedError{
			What: fmt.Sprintf("tool %q names command %q, which its describe document lacks", name, t.Command),
			Fix:  relockFix,
		}
	}
	return args, nil
}

func outputSchema(d *protocol.Describe) json.RawMessage {
	if d.Process == nil || d.Process.Output == nil {
		return nil
	}
	return d.Process.Output.Event
}

// callTimeout: the request's, else the operator's, else DefaultTimeout.
func callTimeout(req time.Duration, t *manifest.Tool) time.Duration {
	switch {
	case req > 0:
		return req
	case t.Runtime.TimeoutSeconds > 0:
		return time.Duration(t.Runtime.TimeoutSeconds * float64(time.Second))
	}
	return DefaultTimeout
}

// stopFor reads runtime.cancel and runtime.timeout.stop. A {"send": EVENT}
// cancel becomes SIGTERM: a oneshot's stdin is closed once its stdin-mode
// arguments are written (v1 rule), so there is no open stdin to send on.
func stopFor(d *protocol.Describe) stopPlan {
	plan := stopPlan{signal: syscall.SIGTERM, grace: DefaultStopGrace}
	if d.Runtime == nil {
		return plan
	}
	if c := d.Runtime.Cancel; c != nil && c.Signal == protocol.SignalInt {
		plan.signal = syscall.SIGINT
	}
	if to := d.Runtime.Timeout; to != nil && to.Stop != nil && *to.Stop >= 0 {
		plan.grace = time.Duration(*to.Stop * float64(time.Second))
	}
	return plan
}

// NeedsHost says what a locked tool needs beyond this package to run: a
// JSON Schema validator (a jsonl tool that declares an output event
// schema) or the plugin host (a plugin tool). A front-end that lacks one
// hands the call to one that has it before reading anything the call
// consumes (stdin).
func NeedsHost(t *manifest.Tool) (validator, plugins bool) {
	if NeedsMCP(t) {
		return true, false // its input schema validates the arguments
	}
	if t == nil || t.Describe == nil {
		return false, false
	}
	validator = t.Describe.Framing() == protocol.FramingJSONL && len(outputSchema(t.Describe)) > 0
	return validator, t.Kind == manifest.KindPlugin
}
