package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/catalog"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// ProcessList is the structured content of processes action "list".
type ProcessList struct {
	Processes []supervisor.Status `json:"processes"`
}

// The structured content of the other process tools is the supervisor's
// own JSON: supervisor.Status (status, stop, process_run, process_status,
// process_kill), supervisor.Page (output, tail), supervisor.SendResult
// (send companions) and supervisor.InboxPage (inbox).

// withConn wraps a built-in tool's handler: it finds the connection's
// session and decodes the arguments strictly into a new A, turning every
// problem into a tool error.
func withConn[A any](s *Server, tool string, h func(ctx context.Context, c *conn, r *reporter, a *A) *mcp.CallToolResult) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, err := s.conn(req.Session)
		if err != nil {
			return failure(Failure{Tool: tool, Error: err.Error()}), nil
		}
		a := new(A)
		if err := decodeStrict(req.Params.Arguments, a); err != nil {
			return failure(Failure{Tool: tool, Error: fmt.Sprintf("arguments of %q: %v", tool, err)}), nil
		}
		return h(ctx, c, newReporter(ctx, req, s.opts.ProgressInterval), a), nil
	}
}

// decodeStrict decodes raw (absent or null: nothing) into v, refusing
// unknown keys and trailing data.
func decodeStrict(raw json.RawMessage, v any) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

// seconds turns a wait_seconds value into a duration, capped at
// supervisor.MaxWait.
func seconds(f float64) time.Duration {
	d := time.Duration(f * float64(time.Second))
	return min(max(d, 0), supervisor.MaxWait)
}

type processesArgs struct {
	Action      string  `json:"action"`
	Process     string  `json:"process"`
	Cursor      int64   `json:"cursor"`
	Max         int     `json:"max"`
	WaitSeconds float64 `json:"wait_seconds"`
	Force       bool    `json:"force"`
}

// processes serves the shared process-management tool.
func (s *Server) processes(ctx context.Context, c *conn, r *reporter, a *processesArgs) *mcp.CallToolResult {
	if a.Action != "list" && a.Process == "" {
		return failure(Failure{Tool: mcpnames.ProcessesTool, Error: fmt.Sprintf("action %q needs the process argument (an id from list)", a.Action)})
	}
	fail := func(err error) *mcp.CallToolResult {
		return failure(Failure{Tool: mcpnames.ProcessesTool, Error: err.Error()})
	}
	switch a.Action {
	case "list":
		list, err := s.sup.List(c.id)
		if err != nil {
			return fail(err)
		}
		if list == nil {
			list = []supervisor.Status{} // "processes" is an array, never null
		}
		return structured(ProcessList{Processes: list})
	case "status":
		stop := r.heartbeat("waiting for " + a.Process)
		st, err := s.sup.Status(ctx, c.id, a.Process, seconds(a.WaitSeconds))
		stop()
		if err != nil {
			return fail(err)
		}
		return structured(st)
	case "output":
		pg, err := s.sup.Output(c.id, a.Process, a.Cursor, a.Max)
		if err != nil {
			return fail(err)
		}
		return structured(pg)
	case "tail":
		pg, err := s.sup.Tail(c.id, a.Process, a.Max)
		if err != nil {
			return fail(err)
		}
		return structured(pg)
	case "stop":
		return s.stop(ctx, c, r, mcpnames.ProcessesTool, a.Process, a.Force)
	}
	return failure(Failure{Tool: mcpnames.ProcessesTool, Error: fmt.Sprintf("unknown action %q; use list, status, output, tail or stop", a.Action)})
}

// stop stops a process and returns its final status.
func (s *Server) stop(ctx context.Context, c *conn, r *reporter, tool, ref string, force bool) *mcp.CallToolResult {
	done := r.heartbeat("stopping " + ref)
	st, err := s.sup.Stop(ctx, c.id, ref, force)
	done()
	if err != nil {
		return failure(Failure{Tool: tool, Error: err.Error()})
	}
	return structured(st)
}

type inboxArgs struct {
	Cursor int64 `json:"cursor"`
	Max    int   `json:"max"`
}

func (s *Server) inbox(_ context.Context, c *conn, _ *reporter, a *inboxArgs) *mcp.CallToolResult {
	pg, err := s.sup.Inbox(c.id, a.Cursor, a.Max)
	if err != nil {
		return failure(Failure{Tool: mcpnames.InboxTool, Error: err.Error()})
	}
	return structured(pg)
}

type sendArgs struct {
	Process string          `json:"process"`
	Event   json.RawMessage `json:"event"`
}

// sendHandler serves the send companion of service entry e: it refuses a
// process of another family, then sends (the supervisor validates the
// event against the declared input.event schema).
func (s *Server) sendHandler(e catalog.Entry) mcp.ToolHandler {
	tool := mcpnames.MCPName(e.Name) + mcpnames.SendSuffix
	return withConn(s, tool, func(ctx context.Context, c *conn, _ *reporter, a *sendArgs) *mcp.CallToolResult {
		fail := func(err error) *mcp.CallToolResult { return failure(Failure{Tool: tool, Error: err.Error()}) }
		if a.Process == "" || len(a.Event) == 0 {
			return fail(errors.New("pass both process (the handle the start returned) and event"))
		}
		st, err := s.sup.Status(ctx, c.id, a.Process, 0)
		if err != nil {
			return fail(err)
		}
		if family := familyOf(st); family != e.Name {
			return fail(fmt.Errorf("process %s is a %q process, not a %q one; send to it with %s", st.Process, family, e.Name, mcpnames.MCPName(family)+mcpnames.SendSuffix))
		}
		res, err := s.sup.Send(ctx, c.id, a.Process, a.Event)
		if err != nil {
			return fail(err)
		}
		return structured(res)
	})
}

// familyOf is the name a process was started by: its capability, else its
// tool.
func familyOf(st supervisor.Status) string {
	if st.Capability != "" {
		return st.Capability
	}
	return st.Tool
}

type commandRunArgs struct {
	Command        string  `json:"command"`
	Name           string  `json:"name"`
	Label          string  `json:"label"`
	Cwd            string  `json:"cwd"`
	Env            envArg  `json:"env"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// WaitSeconds is a pointer: absent means the default wait, 0 none.
	WaitSeconds *float64 `json:"wait_seconds"`
}

func (s *Server) commandRun(ctx context.Context, c *conn, r *reporter, a *commandRunArgs) *mcp.CallToolResult {
	cmd := supervisor.Command{
		Cmd: a.Command, Name: a.Name, Label: a.Label, Cwd: a.Cwd, Env: map[string]string(a.Env),
		CallerEnv: s.opts.CallerEnv,
		Timeout:   time.Duration(max(a.TimeoutSeconds, 0) * float64(time.Second)),
	}
	if a.WaitSeconds != nil {
		cmd.Wait = seconds(*a.WaitSeconds)
		if cmd.Wait == 0 {
			cmd.Wait = -1 // the supervisor's "return at once"
		}
	}
	stop := r.heartbeat("running " + a.Command)
	st, err := s.sup.RunCommand(ctx, c.id, cmd)
	stop()
	if err != nil {
		return failure(Failure{Tool: mcpnames.CommandRunTool, Error: err.Error()})
	}
	s.reap(c)
	return structured(st)
}

type commandStatusArgs struct {
	Process     string  `json:"process"`
	WaitSeconds float64 `json:"wait_seconds"`
}

func (s *Server) commandStatus(ctx context.Context, c *conn, r *reporter, a *commandStatusArgs) *mcp.CallToolResult {
	if a.Process == "" {
		return failure(Failure{Tool: mcpnames.CommandStatusTool, Error: "pass the process (an id from process_run, or the command's name)"})
	}
	stop := r.heartbeat("waiting for " + a.Process)
	st, err := s.sup.Status(ctx, c.id, a.Process, seconds(a.WaitSeconds))
	stop()
	if err != nil {
		return failure(Failure{Tool: mcpnames.CommandStatusTool, Error: err.Error()})
	}
	return structured(st)
}

type commandKillArgs struct {
	Process string `json:"process"`
	Force   bool   `json:"force"`
}

func (s *Server) commandKill(ctx context.Context, c *conn, r *reporter, a *commandKillArgs) *mcp.CallToolResult {
	if a.Process == "" {
		return failure(Failure{Tool: mcpnames.CommandKillTool, Error: "pass the process to stop (an id from process_run, or the command's name)"})
	}
	return s.stop(ctx, c, r, mcpnames.CommandKillTool, a.Process, a.Force)
}

// envArg is process_run's env: a list of "NAME=value" strings (what every
// model API's strict mode can express), or, as before, an object of
// variables. null means none.
type envArg map[string]string

// UnmarshalJSON accepts ["NAME=value", ...] or {"NAME": "value", ...}; an
// entry without "=" or with an empty name is an error naming it.
func (e *envArg) UnmarshalJSON(data []byte) error {
	var list []string
	if err := json.Unmarshal(data, &list); err == nil {
		m := make(map[string]string, len(list))
		for _, kv := range list {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || name == "" {
				return fmt.Errorf("env entry %q: write NAME=value", kv)
			}
			m[name] = value
		}
		*e = m
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return errors.New(`env: pass a list of "NAME=value" strings`)
	}
	*e = m
	return nil
}
