package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/catalog"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// Started is the structured content of a service's start: its handle
// (Tool is the backend that runs, for a capability), the capability it
// was started by, and the send companion that talks to it.
type Started struct {
	supervisor.Handle
	Capability string `json:"capability,omitempty"`
	// Send is the MCP tool that sends it events; "" when it reads none.
	Send string `json:"send,omitempty"`
}

// entryHandler serves one catalog entry: a oneshot runs to its end, a
// stream runs to its end with its events sent as progress, a service is
// started and its handle returned. The mode is the backend's that the
// call resolves to (launcher.Resolve, with the --backend overrides).
func (s *Server) entryHandler(e catalog.Entry, hasSend bool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, err := s.conn(req.Session)
		if err != nil {
			return failure(Failure{Tool: e.Name, Error: err.Error()}), nil
		}
		s.refreshLock()
		args, err := decodeArgs(req.Params.Arguments)
		if err != nil {
			return errorResult(e.Name, &launcher.ArgError{Tool: e.Name, Err: err}), nil
		}
		tool, _, err := launcher.Resolve(s.currentLock(), e.Name, s.opts.Backends)
		if err != nil {
			return errorResult(e.Name, err), nil
		}
		t := s.currentLock().Tools[tool]
		r := newReporter(ctx, req, s.opts.ProgressInterval)
		switch t.Describe.Mode() {
		case protocol.ProcessService:
			return s.start(ctx, c, r, e.Name, args, hasSend), nil
		case protocol.ProcessStream:
			if t.Kind == manifest.KindExec {
				return s.stream(ctx, c, r, e.Name, args), nil
			}
			return s.pluginStream(ctx, c, r, e.Name, args), nil
		}
		return s.oneshot(ctx, c, r, e.Name, args), nil
	}
}

// decodeArgs decodes the call's arguments; absent or null means none.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return map[string]any{}, nil
	}
	return protocol.DecodeArgs(raw)
}

// request is the launcher request of one call.
func (s *Server) request(c *conn, name string, args map[string]any) launcher.Request {
	return launcher.Request{
		LockPath: s.lockPath, Lock: s.currentLock(), Name: name, Backends: s.opts.Backends, Args: args,
		CallerEnv: s.opts.CallerEnv, Session: c.id, StateDir: s.opts.StateDir, Hidden: s.opts.Hidden, Workspace: s.opts.Workspace,
		CompileSchema: compileLauncher, Plugins: c.plugins, MCP: s.backends,
		// A result is sent as at most MaxTextBytes: keeping more would
		// only hold memory (one 25 MB call took 1.4 GB).
		MaxResultBytes: s.opts.MaxTextBytes,
	}
}

func (s *Server) oneshot(ctx context.Context, c *conn, r *reporter, name string, args map[string]any) *mcp.CallToolResult {
	stop := r.heartbeat(name)
	release, err := s.slots.acquire(ctx)
	if err != nil {
		stop()
		return errorResult(name, err)
	}
	res, err := launcher.Run(ctx, s.request(c, name, args))
	release()
	stop()
	s.reapServers(c)
	if res == nil {
		return errorResult(name, err)
	}
	return s.runResult(res, err)
}

// start starts a service for the connection's session and returns its
// handle once it is ready.
func (s *Server) start(ctx context.Context, c *conn, r *reporter, name string, args map[string]any, hasSend bool) *mcp.CallToolResult {
	stop := r.heartbeat("starting " + name)
	release, err := s.slots.acquire(ctx)
	if err != nil {
		stop()
		return errorResult(name, err)
	}
	h, err := s.sup.Start(ctx, c.id, name, args, supervisor.StartOptions{Backends: s.opts.Backends, CallerEnv: s.opts.CallerEnv, Workspace: s.opts.Workspace})
	release()
	stop()
	if err != nil {
		res := errorResult(name, err)
		var se *supervisor.StartError
		if errors.As(err, &se) {
			// The process was started: its output says why it never got ready.
			if pg, terr := s.sup.Tail(c.id, se.Process, supervisor.TailBytes); terr == nil {
				f := Failure{Tool: se.Tool, ExitCode: launcher.ExitCode(err), Error: err.Error(), Output: pg.Text()}
				res = failure(f)
			}
		}
		return res
	}
	s.reap(c)
	st := Started{Handle: h}
	if h.Tool != name {
		st.Capability = name
	}
	if hasSend {
		st.Send = mcpnames.MCPName(name) + mcpnames.SendSuffix
	}
	return structured(st)
}

// stream runs an exec stream tool to its end: each event is sent as a
// progress notification as it arrives; the result holds the last
// StreamKeep events and the count of the others.
func (s *Server) stream(ctx context.Context, c *conn, r *reporter, name string, args map[string]any) *mcp.CallToolResult {
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return errorResult(name, err)
	}
	defer release()
	q := r.queue()
	res, err := supervisor.RunStream(ctx, supervisor.StreamRequest{
		LockPath: s.lockPath, Lock: s.currentLock(), Name: name, Backends: s.opts.Backends, Args: args,
		CallerEnv: s.opts.CallerEnv, Session: c.id, Keep: s.opts.StreamKeep, StateDir: s.opts.StateDir, Hidden: s.opts.Hidden,
		Workspace:     s.opts.Workspace,
		OnEvent:       func(e launcher.Event) { q.push(eventText(e)) },
		CompileSchema: compileSupervisor,
	})
	q.close()
	if err != nil {
		return errorResult(name, err)
	}
	events, cut := lastWithin(res.Events, s.opts.MaxTextBytes)
	ev := EventsResult{
		Tool: res.Tool, Backend: res.Backend, Capability: res.Capability, ExitCode: res.ExitCode,
		Events: nonNil(events), Count: res.Count, Elided: res.Elided + cut, Truncated: cut > 0, OutputCut: res.OutputCut,
	}
	if res.ExitCode != 0 || res.TimedOut {
		f := Failure{
			Tool: res.Tool, Backend: res.Backend, Capability: res.Capability,
			ExitCode: res.ExitCode, TimedOut: res.TimedOut, StderrTail: res.StderrTail,
			Error: fmt.Sprintf("%s failed", res.Tool), Output: s.capText(jsonText(ev)),
		}
		if res.TimedOut {
			f.Error = fmt.Sprintf("%s was stopped: %s", res.Tool, res.Reason)
		}
		return failure(f)
	}
	return structured(ev)
}

// pluginStream runs a plugin stream tool with the launcher (the supervisor
// runs exec tools only): its stdout carries one event per line as it
// arrives, sent as progress; the result keeps the last StreamKeep events.
func (s *Server) pluginStream(ctx context.Context, c *conn, r *reporter, name string, args map[string]any) *mcp.CallToolResult {
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return errorResult(name, err)
	}
	defer release()
	q := r.queue()
	req := s.request(c, name, args)
	req.Stdout = &lineWriter{emit: q.push}
	res, err := launcher.Run(ctx, req)
	q.close()
	if res == nil {
		return errorResult(name, err)
	}
	if (res.Events != nil || res.Framing == protocol.FramingJSONL) && err == nil && res.ExitCode == 0 && !res.TimedOut {
		ev := EventsResult{
			Tool: res.Tool, Backend: res.Backend, Capability: res.Capability,
			Events: nonNil(res.Events), Count: len(res.Events), Truncated: res.Truncated,
		}
		if keep := s.opts.StreamKeep; len(ev.Events) > keep {
			ev.Elided = len(ev.Events) - keep
			ev.Events = ev.Events[ev.Elided:]
		}
		return structured(ev)
	}
	return s.runResult(res, err)
}

// lastWithin returns the last events whose cost (launcher.EventCost) fits
// in max bytes, and how many came before them.
func lastWithin(events []launcher.Event, max int) ([]launcher.Event, int) {
	total, i := 0, len(events)
	for i > 0 {
		c := launcher.EventCost(events[i-1])
		if total+c > max {
			break
		}
		total += c
		i--
	}
	return events[i:], i
}

// eventText is an event as a progress message: its JSON, or the invalid
// line with the reason, cut to maxProgressText.
func eventText(e launcher.Event) string {
	t := string(e.Event)
	if e.Invalid {
		t = fmt.Sprintf("invalid event %q: %s", e.Raw, e.Error)
	}
	if len(t) > maxProgressText {
		t = t[:maxProgressText] + "…"
	}
	return t
}

// maxProgressText bounds one progress message.
const maxProgressText = 4 << 10

// lineWriter calls emit with each non-blank line written to it, without
// its newline; a line longer than maxProgressText is cut there (the rest
// of it is skipped), so the buffer stays bounded.
type lineWriter struct {
	emit func(string)
	buf  []byte
	skip bool // the current line was cut: drop bytes up to its newline
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.skip {
			w.buf = append(w.buf, chunk...)
			if len(w.buf) > maxProgressText {
				w.buf, w.skip = w.buf[:maxProgressText], true
				w.flush()
			}
		}
		if i < 0 {
			break
		}
		if !w.skip {
			w.flush()
		}
		w.skip = false
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) flush() {
	if len(bytes.TrimSpace(w.buf)) > 0 {
		w.emit(string(w.buf))
	}
	w.buf = w.buf[:0]
}

// The JSON Schema compilers the launcher and the supervisor take: the MCP
// server runs inside toolbox-core, which links the validator (it compiles
// each schema once per process).
func compileLauncher(schema json.RawMessage) (launcher.EventValidator, error) {
	return validate.CompileEventSchema(schema)
}

func compileSupervisor(schema json.RawMessage) (supervisor.EventValidator, error) {
	return validate.CompileEventSchema(schema)
}
