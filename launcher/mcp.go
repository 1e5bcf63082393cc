package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
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
	call := MCPCall{
		LockPath: req.LockPath, Lock: req.Lock, Server: t.MCP.Server, Tool: t.MCP.Name,
		Args: values, CallerEnv: req.CallerEnv, Session: req.Session,
	}
	o := execOptions{timeout: callTimeout(req.Timeout, t), stdout: req.Stdout, stderr: req.Stderr, redactor: NewRedactor(nil)}
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
		return nil, err
	}
	res.Tool, res.Backend, res.MCPResult = toolName, backend, answer
	if backend != "" {
		res.Capability = req.Name
	}
	return res, err
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

// VerifyMCPServer checks the locked MCP server name like Verify checks a
// tool's binary: it is in the lock, was locked on this platform, and its
// executable and entry script still have their sha256 (a server reached by
// URL has neither). Every failure is a
// *RefusedError whose fix is `toolbox lock`. Verify calls it for the tools
// of MCP servers; the toolbox file is Verify's to check.
func VerifyMCPServer(lockPath string, l *manifest.Lock, name string) error {
	s := l.MCPServers[name]
	if s == nil || (len(s.Command) == 0 && s.URL == "") {
		return &RefusedError{What: fmt.Sprintf("mcp server %q is not in the lock", name), Fix: relockFix}
	}
	if s.URL != "" {
		return nil // nothing local to verify: its listing is, at every call
	}
	if want := manifest.Platform(); s.Platform != want {
		return &RefusedError{What: fmt.Sprintf("mcp server %q was locked on %q, this is %q", name, s.Platform, want), Fix: relockFix + " on this machine"}
	}
	files := []struct{ what, path, sum string }{{"executable", s.Command[0], s.SHA256}}
	if s.Entry != nil {
		files = append(files, struct{ what, path, sum string }{"entry script", s.Entry.Path, s.Entry.SHA256})
	}
	for _, f := range files {
		p := filepath.FromSlash(f.path)
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(lockPath), p)
		}
		if err := checkHash(p, f.sum); err != nil {
			return &RefusedError{What: fmt.Sprintf("%s %q of mcp server %q %s since the lock", f.what, f.path, name, err), Fix: relockFix, Err: err}
		}
	}
	return nil
}
