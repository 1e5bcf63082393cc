package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// handle runs one request and returns its result (the op's JSON type) or
// an error ErrorOf turns into a code.
func (s *Server) handle(ctx context.Context, req wire.Request) (any, error) {
	if req.Op == wire.OpPing {
		return s.info, nil
	}
	if req.Session == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "op %q needs a session", req.Op)
	}
	if req.Workspace != "" && !filepath.IsAbs(req.Workspace) {
		// Resolved here it would be relative to the daemon's directory,
		// not the client's.
		return nil, wire.Errorf(wire.CodeBadRequest, "workspace %q is not absolute; send the client's directory made absolute", req.Workspace)
	}
	sup := s.sup
	switch req.Op {
	case wire.OpStart:
		return s.start(ctx, req)
	case wire.OpRunCommand:
		return s.runCommand(ctx, req)
	case wire.OpList:
		l, err := sup.List(req.Session)
		if l == nil && err == nil {
			l = []supervisor.Status{}
		}
		return l, err
	case wire.OpInbox:
		return sup.Inbox(req.Session, req.Cursor, req.Max)
	case wire.OpCloseSession:
		if err := sup.CloseSession(ctx, req.Session); err != nil {
			return nil, err
		}
		s.logf("closed session %q", req.Session)
		return struct{}{}, nil
	}
	if !processOps[req.Op] {
		return nil, wire.Errorf(wire.CodeBadRequest, "unknown op %q", req.Op)
	}
	if req.Process == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "op %q needs a process (its id or name)", req.Op)
	}
	switch req.Op {
	case wire.OpSend:
		if len(req.Event) == 0 {
			return nil, wire.Errorf(wire.CodeBadRequest, "op send needs an event")
		}
		return sup.Send(ctx, req.Session, req.Process, req.Event)
	case wire.OpStatus:
		return sup.Status(ctx, req.Session, req.Process, millis(req.WaitMS))
	case wire.OpOutput:
		return sup.Output(req.Session, req.Process, req.Cursor, req.Max)
	case wire.OpTail:
		return sup.Tail(req.Session, req.Process, req.Bytes)
	case wire.OpStop:
		st, err := sup.Stop(ctx, req.Session, req.Process, req.Force)
		if err == nil {
			s.logf("stopped %s (session %q): %s", st.Process, req.Session, st.Status)
		}
		return st, err
	case wire.OpWait:
		return s.wait(ctx, req)
	}
	return nil, wire.Errorf(wire.CodeBadRequest, "unknown op %q", req.Op)
}

// processOps are the ops about one process (Request.Process).
var processOps = map[string]bool{
	wire.OpSend: true, wire.OpStatus: true, wire.OpOutput: true,
	wire.OpTail: true, wire.OpStop: true, wire.OpWait: true,
}

// start is op start.
func (s *Server) start(ctx context.Context, req wire.Request) (any, error) {
	if req.Tool == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "op start needs a tool")
	}
	if err := s.useLock(req.Lock); err != nil {
		return nil, err
	}
	raw := []byte(req.Args)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	args, err := protocol.DecodeArgs(raw)
	if err != nil {
		return nil, &launcher.ArgError{Tool: req.Tool, Err: err}
	}
	h, err := s.sup.Start(ctx, req.Session, req.Tool, args, supervisor.StartOptions{Backends: req.Backends, CallerEnv: req.CallerEnv, Workspace: workspaceOf(req)})
	if err != nil {
		return nil, err
	}
	s.logf("started %s as %s (session %q): %s", h.Tool, h.Process, req.Session, h.Status)
	return h, nil
}

// runCommand is op run_command.
func (s *Server) runCommand(ctx context.Context, req wire.Request) (any, error) {
	c := req.Command
	if c == nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "op run_command needs a command")
	}
	if err := s.useLock(req.Lock); err != nil {
		return nil, err
	}
	wait := millis(req.WaitMS)
	if req.WaitMS < 0 {
		wait = -1
	}
	st, err := s.sup.RunCommand(ctx, req.Session, supervisor.Command{
		Cmd: c.Cmd, Name: c.Name, Label: c.Label, Cwd: c.Cwd, Env: c.Env,
		CallerEnv: req.CallerEnv, Timeout: millis(c.TimeoutMS), Wait: wait,
		Workspace: workspaceOf(req),
	})
	if err != nil {
		return nil, err
	}
	s.logf("ran command %s (session %q): %s", st.Process, req.Session, st.Status)
	return st, nil
}

// wait is op wait: Supervisor.Wait, bounded by WaitMS when set. A bound
// that passes is no error: the status (Done false) is the answer.
func (s *Server) wait(ctx context.Context, req wire.Request) (any, error) {
	if req.WaitMS <= 0 {
		return s.sup.Wait(ctx, req.Session, req.Process)
	}
	wctx, cancel := context.WithTimeout(ctx, millis(req.WaitMS))
	defer cancel()
	st, err := s.sup.Wait(wctx, req.Session, req.Process)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return st, nil
	}
	return st, err
}

// useLock refuses a request meant for another lock, and re-reads the
// daemon's lock when its file changed.
func (s *Server) useLock(want string) error {
	if lf := s.lock.refresh(s.logf); lf != nil {
		s.sup.SetLock(lf.Path, lf.Lock)
		s.logf("re-read the lock %s", lf.Path)
	}
	if want != "" && !sameFile(want, s.info.Lock) {
		return &wire.Error{Code: wire.CodeWrongLock, Message: "this daemon serves " + s.info.Lock + ", not " + want +
			"; start a daemon for it with its own --state-dir, or restart `toolbox serve` with -f"}
	}
	return nil
}

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// workspaceOf is the client's choice of workspace; the zero value leaves
// the daemon's own. A source other than the two a client sends is taken
// as --workspace's (the home-directory rule applies only to a current
// directory the daemon chose itself).
func workspaceOf(req wire.Request) runspec.Workspace {
	if req.Workspace == "" {
		return runspec.Workspace{}
	}
	from := runspec.WorkspaceSource(req.WorkspaceFrom)
	if from != runspec.FromEnv {
		from = runspec.FromFlag
	}
	return runspec.Workspace{Dir: req.Workspace, From: from}
}
