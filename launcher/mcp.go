package launcher

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// ErrNeedsMCP: the tool is served by an MCP server and the Request has no
// MCP runner. Nothing was started; cmd/toolbox hands the call to
// toolbox-core, which links the MCP client.
var ErrNeedsMCP = errors.New("running it needs the MCP client")

// MCPCall is one call of a tool of kind manifest.KindMCP.
type MCPCall struct {
	// LockPath and Lock are the request's: the runner starts the server
	// from Lock.MCPServers[Server] (runspec.MCPServer) and verifies its
	// listing against the lock's pins (mcpbackend.PinOf).
	LockPath string
	Lock     *manifest.Lock
	// Server is the server's name; Tool the tool's name on the server.
	Server string
	Tool   string
	// Args are the validated arguments.
	Args map[string]any
	// CallerEnv and Session build the server's environment (runspec).
	CallerEnv []string
	// Session owns warm servers: a runner that keeps servers keeps one
	// per session and server, and stops them with the session.
	Session string
	// StateDir is the state directory the caller uses ("" for none): no
	// sandboxed server may reach it (runspec.NewTrust).
	StateDir string
	// Hidden are more paths no server may reach (Request.Hidden).
	Hidden []string
	// Workspace is the caller's choice of workspace (Request.Workspace):
	// a server's paths naming {workspace} are resolved under it
	// (runspec.Trust.WithWorkspace). A runner that keeps servers keeps
	// one per workspace too.
	Workspace runspec.Workspace
	// Redactor replaces the server's secrets (the values of its envdir)
	// in what the runner reports; nil when it has none.
	Redactor *Redactor
}

// MCPResult is the server's answer to a call.
type MCPResult struct {
	// Text is what `toolbox run` prints (mcpbackend.Text).
	Text string
	// IsError is the result's isError: the tool failed.
	IsError bool
	// Result is the server's CallToolResult as JSON, for a front-end that
	// passes it on as it came (the MCP server).
	Result json.RawMessage
}

// MCPRunner calls tools of MCP servers (package launcher/mcprun). Before
// it calls, it must have the server running as the lock says and its
// tools/list equal to the lock's pins; a server that cannot start or that
// lists anything else is refused with started false and an error (a
// *RefusedError naming the tool and the field that changed, for drift).
// When ctx ends it must return at once with ctx's error.
type MCPRunner interface {
	CallMCP(ctx context.Context, call MCPCall) (res *MCPResult, started bool, err error)
}

// NeedsMCP says whether t is served by an MCP server, which only a
// Request with an MCP runner can call.
func NeedsMCP(t *manifest.Tool) bool { return t != nil && t.Kind == manifest.KindMCP }

// runMCP runs a call of an MCP tool: its arguments (nulls dropped: an
// absent argument, as for any tool) validated against the locked input
// schema, then the call through req.MCP bounded by the call timeout. A
// tool error (isError) exits 1 with its text on stderr; a success prints
// its text on stdout.
func runMCP(ctx context.Context, req Request, toolName, backend string, t *manifest.Tool) (*Result, error) {
	if req.MCP == nil {
		return nil, fmt.Errorf("%q is served by MCP server %q: %w", toolName, t.MCP.Server, ErrNeedsMCP)
	}
	called := toolName
	if backend != "" {
		called = req.Name
	}
	values := map[string]any{}
	for k, v := range req.Args {
		if v != nil {
			values[k] = v
		}
	}
	if err := validateMCPArgs(req, toolName, t, values); err != nil {
		var re *RefusedError
		if errors.As(err, &re) || errors.Is(err, ErrNeedsValidator) {
			return nil, err
		}
		return nil, &ArgError{Tool: called, Err: err}
	}
	red := NewRedactor(MCPSecrets(req.LockPath, req.Lock, t.MCP.Server))
	call := MCPCall{
		LockPath: req.LockPath, Lock: req.Lock, Server: t.MCP.Server, Tool: t.MCP.Name,
		Args: values, CallerEnv: req.CallerEnv, Session: req.Session, StateDir: req.StateDir,
		Hidden: req.Hidden, Workspace: req.Workspace, Redactor: red,
	}
	o := execOptions{timeout: callTimeout(req.Timeout, t), stdout: req.Stdout, stderr: req.Stderr, redactor: red, limit: req.MaxResultBytes}
	var answer json.RawMessage
	res, err := collect(t.MCP.Server, o, func(stdout, stderr io.Writer) (outcome, error) {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		r, started, err := req.MCP.CallMCP(cctx, call)
		out := outcome{started: started, elapsed: time.Since(start)}
		switch {
		case !started:
			return out, err
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			out.timedOut, out.code = true, ExitTimeout
			return out, nil
		case ctx.Err() != nil:
			out.canceled = true
			return out, nil
		case err != nil:
			out.code = 1
			return out, err
		}
		answer = r.Result
		if budget := cmp.Or(req.MaxResultBytes, MaxResultBytes); len(answer) > budget {
			answer = nil // Output, truncated to the budget, stands for it
		}
		if len(answer) > 0 {
			answer = json.RawMessage(red.String(string(answer)))
		}
		text := r.Text
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		w := stdout
		if r.IsError {
			out.code, w = 1, stderr
		}
		_, werr := io.WriteString(w, text)
		return out, werr
	})
	if res == nil {
		return nil, red.Error(err)
	}
	res.Tool, res.Backend, res.MCPResult = toolName, backend, answer
	if backend != "" {
		res.Capability = req.Name
	}
	return res, red.Error(err) // the server's error may echo a secret
}

// validateMCPArgs checks values against the tool's locked inputSchema with
// req.CompileSchema (the server never sees arguments its schema refuses).
func validateMCPArgs(req Request, toolName string, t *manifest.Tool, values map[string]any) error {
	var d struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(t.MCP.Definition, &d); err != nil {
		return &RefusedError{What: fmt.Sprintf("the locked definition of %q does not decode: %v", toolName, err), Fix: relockFix}
	}
	if req.CompileSchema == nil {
		return fmt.Errorf("%q takes arguments by a JSON Schema: %w", toolName, ErrNeedsValidator)
	}
	v, err := req.CompileSchema(d.InputSchema)
	if err != nil {
		return &RefusedError{What: fmt.Sprintf("compiling the input schema of %q: %v", toolName, err), Fix: relockFix, Err: err}
	}
	data, err := json.Marshal(values)
	if err != nil {
		return err
	}
	if _, err := v.Validate(data); err != nil {
		// The validator speaks of events; these are arguments.
		msg := strings.TrimPrefix(err.Error(), "event does not match its schema: ")
		return fmt.Errorf("they do not match the tool's input schema: %s", msg)
	}
	return nil
}

// MinMCPSecret is runspec.MinMCPSecret: the shortest envdir value
// MCPSecrets counts as a secret.
const MinMCPSecret = runspec.MinMCPSecret

// MCPSecrets are what every report of the calls of the locked MCP server
// name redacts (Redactor), as a tool's secret bindings: runspec.MCPSecrets
// of the lock at lockPath (the bearer token of a server reached by URL,
// and every value of its envdir of at least MinMCPSecret bytes). nil when
// it has no envdir or it cannot be read (the start then fails with the
// reason).
func MCPSecrets(lockPath string, l *manifest.Lock, name string) []string {
	return runspec.MCPSecrets(filepath.Dir(lockPath), l, name)
}

// VerifyMCPServer checks the locked MCP server name like Verify checks a
// tool's binary: it is in the lock, was locked on this platform, and its
// executable and entry script still have their sha256 (a server reached by
// URL has neither). It is OpenMCPServer without keeping the executable
// open. Every failure is a *RefusedError whose fix is `toolbox lock`;
// Verify calls it for the tools of MCP servers (the toolbox file is
// Verify's to check).
func VerifyMCPServer(lockPath string, l *manifest.Lock, name string) error {
	exe, err := OpenMCPServer(lockPath, l, name)
	exe.Close()
	return err
}

// OpenMCPServer opens the executable of the locked MCP server name once,
// checks its sha256 from that descriptor (sandbox.OpenExecutable) and the
// entry script's by its path, and returns the executable the server must
// be started from (sandbox.Command.Exe): a file swapped in after the check
// never runs (DESIGN.md §6). For an interpreter (node, python) what is
// pinned is the interpreter and its entry script: the interpreter reads the
// script, and whatever it imports, by path, so the entry is hashed here
// and kept out of every tool's reach as a protected path (runspec.NewTrust)
// rather than executed from a descriptor. A server reached by URL has
// nothing local: nil, nil. The caller closes the executable once the
// server has started. Errors as VerifyMCPServer's; an executable others
// could rewrite in place is refused (*sandbox.RefusalError naming it).
func OpenMCPServer(lockPath string, l *manifest.Lock, name string) (*sandbox.Executable, error) {
	var s *manifest.MCPServer
	if l != nil {
		s = l.MCPServers[name]
	}
	if s == nil || (len(s.Command) == 0 && s.URL == "") {
		return nil, &RefusedError{What: fmt.Sprintf("mcp server %q is not in the lock", name), Fix: relockFix}
	}
	if s.URL != "" {
		return nil, nil // nothing local to verify: its listing is, at every call
	}
	if want := manifest.Platform(); s.Platform != want {
		return nil, &RefusedError{What: fmt.Sprintf("mcp server %q was locked on %q, this is %q", name, s.Platform, want), Fix: relockFix + " on this machine"}
	}
	abs := func(p string) string { return lockedPath(lockPath, p) }
	if s.Entry != nil {
		if err := checkHash(abs(s.Entry.Path), s.Entry.SHA256); err != nil {
			return nil, &RefusedError{What: fmt.Sprintf("entry script %q of mcp server %q %s since the lock", s.Entry.Path, name, err), Fix: relockFix, Err: err}
		}
	}
	exe, err := openHashed(abs(s.Command[0]), s.SHA256)
	if err != nil {
		return nil, openRefused(err, fmt.Sprintf("executable %q of mcp server %q", s.Command[0], name), func(r *sandbox.RefusalError) error {
			return &RefusedError{What: fmt.Sprintf("mcp server %q: %v", name, r), Fix: r.Fix, Err: r}
		})
	}
	return exe, nil
}
