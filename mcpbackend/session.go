package mcpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/tail"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// ProtocolVersion is the MCP protocol version a session offers. Servers
// that speak an older one negotiate it down; newer versions (2026-07-28)
// let the SDK cache tools/list results, which would hide a changed
// listing, so they are not offered.
const ProtocolVersion = "2025-11-25"

// ClientName is the clientInfo name a session announces.
const ClientName = "toolbox"

// Defaults of Launch.
const (
	DefaultStartTimeout = 30 * time.Second
	// stopGrace is how long a server gets to exit once its stdin is
	// closed before its process group is killed.
	stopGrace = 2 * time.Second
	// stderrTailBytes is how much of a server's stderr is kept for errors.
	stderrTailBytes = 4 << 10
	// maxListPages bounds the pages of one tools/list.
	maxListPages = 100
)

// MaxListBytes bounds a whole tools/list (the sum of its pages' results,
// as the server wrote them): the listing is held, and canonicalized, at
// every verification; a frame alone may be 16 MiB and a listing 100
// pages. A listing that could be locked is far smaller: the lock holds
// its definitions and is at most manifest.MaxLockBytes.
const MaxListBytes = 16 << 20

// listBudget is MaxListBytes; tests lower it.
var listBudget = MaxListBytes

// Launch says how to start one server.
type Launch struct {
	// Server is the server's name in the toolbox file, for messages.
	Server string
	// Spec confines the process (nil = sandbox.None); Command is the
	// executable, its arguments, environment and directory (runspec).
	// Command's Stdin, Stdout and Stderr are replaced by Start.
	Spec    *sandbox.Spec
	Command sandbox.Command
	// StartTimeout bounds the start and the initialize handshake
	// (0 = DefaultStartTimeout).
	StartTimeout time.Duration
	// OnListChanged, when set, is called when the server sends
	// notifications/tools/list_changed, on a goroutine of the session's,
	// one call at a time: notifications that arrive during a call make
	// one more call after it.
	OnListChanged func()
	// Stderr, when set, receives a copy of the server's stderr.
	Stderr io.Writer
}

// Definition is one tool as a server listed it: its name and its whole
// wire object in canonical form (manifest.CanonicalJSON), with the sha256
// of that form.
type Definition struct {
	Name   string
	JSON   json.RawMessage
	SHA256 string
}

// Session is an initialized MCP client session with one server. Its
// methods are safe for concurrent use.
type Session struct {
	server  string
	cs      *mcp.ClientSession
	capture *captureConn
	proc    *sandbox.Process // nil for Connect
	stderr  *tail.Buffer
	listMu  sync.Mutex
	done    chan struct{}
	once    sync.Once
}

// Start starts the server of l under its sandbox, its stdin and stdout
// being the MCP stdio transport, and initializes a session. The server
// must answer initialize within l.StartTimeout. Errors: a
// *sandbox.RefusalError (the sandbox cannot honour the spec), a failed
// start (wrapping sandbox.ErrStartFailed), or a server that exits or does
// not initialize (the error carries the end of its stderr). The caller
// closes the session.
func Start(ctx context.Context, l Launch) (*Session, error) {
	timeout := l.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting mcp server %q: %w", l.Server, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("starting mcp server %q: %w", l.Server, err)
	}
	errTail := &tail.Buffer{Max: stderrTailBytes}
	cmd := l.Command
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errTail
	if l.Stderr != nil {
		cmd.Stderr = io.MultiWriter(errTail, l.Stderr)
	}
	p, err := sandbox.Start(l.Spec, cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting mcp server %q: %w", l.Server, err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := connect(cctx, l.Server, &mcp.IOTransport{Reader: outR, Writer: inW}, l.OnListChanged, p, errTail)
	if err != nil {
		inW.Close()
		outR.Close()
		stopProcess(p)
		if cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer to initialize within %s", timeout)
		}
		return nil, fmt.Errorf("initializing mcp server %q: %w%s", l.Server, err, stderrSuffix(errTail))
	}
	go func() {
		<-p.Done()
		s.end()
	}()
	return s, nil
}

// Connect initializes a session over any transport (in-process servers,
// tests). server names it in messages; onListChanged is as in Launch.
func Connect(ctx context.Context, server string, t mcp.Transport, onListChanged func()) (*Session, error) {
	s, err := connect(ctx, server, t, onListChanged, nil, &tail.Buffer{Max: stderrTailBytes})
	if err != nil {
		return nil, fmt.Errorf("initializing mcp server %q: %w", server, err)
	}
	return s, nil
}

func connect(ctx context.Context, server string, t mcp.Transport, onListChanged func(), p *sandbox.Process, stderr *tail.Buffer) (*Session, error) {
	s := &Session{server: server, capture: &captureConn{}, proc: p, stderr: stderr, done: make(chan struct{})}
	if onListChanged != nil {
		// One check at a time, and at most one more queued: a server
		// that floods the notification gets no goroutine per copy.
		changed := make(chan struct{}, 1)
		s.capture.listChanged = func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		go func() {
			for {
				select {
				case <-changed:
					onListChanged()
				case <-s.done:
					return
				}
			}
		}()
	}
	opts := &mcp.ClientOptions{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		// Nothing is offered to the server: no roots, sampling or
		// elicitation (and captureConn answers its requests itself).
		Capabilities: &mcp.ClientCapabilities{},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: ClientName, Version: "1"}, opts)
	cs, err := client.Connect(ctx, &captureTransport{inner: t, conn: s.capture}, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		s.end()
		return nil, err
	}
	s.cs = cs
	go func() {
		_ = cs.Wait()
		s.end()
	}()
	return s, nil
}

func (s *Session) end() { s.once.Do(func() { close(s.done) }) }

// Server is the server's name in the toolbox file.
func (s *Session) Server() string { return s.server }

// Info is the serverInfo the server announced at initialize.
func (s *Session) Info() manifest.MCPImplementation {
	var info manifest.MCPImplementation
	if r := s.cs.InitializeResult(); r != nil && r.ServerInfo != nil {
		info = manifest.MCPImplementation{Name: r.ServerInfo.Name, Version: r.ServerInfo.Version}
	}
	return info
}

// Done is closed once the session has ended: the server exited or closed
// its connection, or Close was called.
func (s *Session) Done() <-chan struct{} { return s.done }

// Stderr returns the end of what the server wrote on its stderr.
func (s *Session) Stderr() string { return s.stderr.String() }

// List asks for the server's tools (every page) and returns them in the
// order listed, each in canonical form. Errors: the request failed, a
// page or a tool is not a JSON object, a tool has no name, or two tools
// share one.
func (s *Session) List(ctx context.Context) ([]Definition, error) {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	var out []Definition
	seen := map[string]bool{}
	cursor := ""
	size := 0
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, s.fail("listing tools", fmt.Errorf("more than %d pages", maxListPages))
		}
		s.capture.take()
		if _, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor}); err != nil {
			return nil, s.fail("listing tools", err)
		}
		raw := s.capture.take()
		if size += len(raw); size > listBudget {
			return nil, s.fail("listing tools", fmt.Errorf("the listing has more than %d bytes", listBudget))
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, s.fail("listing tools", fmt.Errorf("the result is not a tool list: %w", err))
		}
		for _, t := range res.Tools {
			d, err := definition(t)
			if err != nil {
				return nil, s.fail("listing tools", err)
			}
			if seen[d.Name] {
				return nil, s.fail("listing tools", fmt.Errorf("tool %q is listed twice", d.Name))
			}
			seen[d.Name] = true
			out = append(out, d)
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			return out, nil
		}
		cursor = res.NextCursor
	}
}

// definition reads one tool object of a listing.
func definition(raw json.RawMessage) (Definition, error) {
	var head struct {
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Definition{}, fmt.Errorf("a listed tool is not an object: %w", err)
	}
	if head.Name == nil || *head.Name == "" {
		return Definition{}, errors.New("a listed tool has no name")
	}
	c, err := manifest.CanonicalJSON(raw)
	if err != nil {
		return Definition{}, err
	}
	sum, err := manifest.DefinitionSHA256(c)
	if err != nil {
		return Definition{}, err
	}
	return Definition{Name: *head.Name, JSON: c, SHA256: sum}, nil
}

// Verify lists the server's tools and compares them, and the server's
// name and version, with p. Drift is a *DriftError naming each tool and
// field that differ; a failed listing is returned as it is.
func (s *Session) Verify(ctx context.Context, p *Pin) error {
	defs, err := s.List(ctx)
	if err != nil {
		return err
	}
	if lines := p.Diff(s.Info(), defs); len(lines) > 0 {
		return &DriftError{Server: p.Server, Lines: lines}
	}
	return nil
}

// Call calls the server's tool name with args (a JSON object; nil is {}).
// A tool error is a result with IsError set, not an error; an error is a
// failed request (the server is gone, the context ended, a protocol
// error).
func (s *Session) Call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	if args == nil {
		args = map[string]any{}
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, s.fail(fmt.Sprintf("calling tool %q", name), err)
	}
	return res, nil
}

// Broken says whether err, returned by one of s's requests, means the
// session is gone (the server closed its stdout or exited, the connection
// closed) rather than that one request failed.
func (s *Session) Broken(err error) bool {
	select {
	case <-s.done:
		return true
	default:
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed)
}

// fail names the server and what was being done, adding the end of its
// stderr when it has exited.
func (s *Session) fail(doing string, err error) error {
	suffix := ""
	select {
	case <-s.done:
		suffix = stderrSuffix(s.stderr)
	default:
	}
	return fmt.Errorf("mcp server %q: %s: %w%s", s.server, doing, err, suffix)
}

// Close ends the session: the connection is closed (the server's stdin
// with it), the server gets a short grace to exit, then its process group
// is killed, and with it whatever still holds the connection (a server
// that reads nothing keeps a write, and so the SDK's close, blocked). It
// waits for the process and is idempotent.
func (s *Session) Close() error {
	closed := make(chan error, 1)
	go func() { closed <- s.cs.Close() }()
	var err error
	if s.proc == nil {
		err = <-closed
	} else {
		grace := time.NewTimer(stopGrace)
		defer grace.Stop()
		select {
		case err = <-closed:
			select {
			case <-s.proc.Done():
			case <-grace.C:
				stopProcess(s.proc)
			}
		case <-grace.C:
			stopProcess(s.proc)
			s.capture.abort()
			err = <-closed
		}
		_, _ = s.proc.Wait()
	}
	s.end()
	if errors.Is(err, mcp.ErrConnectionClosed) {
		err = nil
	}
	return err
}

// stopProcess kills p's process group and waits for it.
func stopProcess(p *sandbox.Process) {
	_ = p.Signal(syscall.SIGKILL)
	_, _ = p.Wait()
}

// stderrSuffix is "; stderr: TAIL", or "" when the server wrote nothing.
func stderrSuffix(t *tail.Buffer) string {
	if s := t.String(); s != "" {
		return "; stderr: " + s
	}
	return ""
}
