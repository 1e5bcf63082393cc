package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
)

// ErrNoDaemon: nothing listens on the socket (it is missing, or its daemon
// died). The error is a *NoDaemonError.
var ErrNoDaemon = errors.New("no toolbox daemon is running")

// NoDaemonError is a connection that found no daemon on Socket.
type NoDaemonError struct {
	Socket string
	Err    error
}

// Error names the socket; the fix (start `toolbox serve`) is the caller's
// to say.
func (e *NoDaemonError) Error() string {
	return fmt.Sprintf("no toolbox daemon is listening on %s (%v)", e.Socket, e.Err)
}

// Unwrap returns ErrNoDaemon and the connection error.
func (e *NoDaemonError) Unwrap() []error { return []error{ErrNoDaemon, e.Err} }

// Client sends requests to the daemon listening on Socket. It holds no
// connection: every call dials, sends one request and reads one response,
// so a Client is safe for concurrent use.
type Client struct {
	// Socket is the daemon's socket path (SocketPath of its state dir).
	Socket string
	// QuickWait bounds the wait for the answer to a quick request (ping,
	// list, output, tail, inbox; status, beyond its own wait): a daemon
	// that takes the connection and never answers (stopped by SIGSTOP,
	// wedged) fails the call with an *UnresponsiveError naming its pid,
	// where it hung for ever. Requests that wait on processes (start,
	// send, stop, wait, run_command) are bounded by the caller's context
	// only. 0 means DefaultQuickWait; negative, no bound.
	QuickWait time.Duration
}

// DefaultQuickWait is Client.QuickWait's default: a quick request takes
// the daemon milliseconds; ten seconds leaves room for a loaded machine.
const DefaultQuickWait = 10 * time.Second

// UnresponsiveError is a daemon that took a quick request and did not
// answer it within Wait.
type UnresponsiveError struct {
	Socket string
	Op     string
	// PID is the daemon's pid (-1 when unknown); State its state letter
	// from /proc ('T': stopped), 0 when unknown.
	PID   int
	State byte
	Wait  time.Duration
}

func (e *UnresponsiveError) Error() string {
	who := "the toolbox daemon"
	if e.PID > 0 {
		who = fmt.Sprintf("the toolbox daemon (pid %d)", e.PID)
	}
	msg := fmt.Sprintf("%s on %s took the %s request but did not answer within %s", who, e.Socket, e.Op, e.Wait)
	switch {
	case e.State == 'T' || e.State == 't':
		return msg + fmt.Sprintf(": it is stopped; resume it with `kill -CONT %d`", e.PID)
	case e.PID > 0:
		return msg + fmt.Sprintf(": it is wedged or overloaded; see `cat /proc/%d/stack`, or restart `toolbox serve`", e.PID)
	}
	return msg + ": it is stopped, wedged or overloaded; restart `toolbox serve`"
}

// quickWait is how long the answer to req may take, 0 for no bound.
func (c *Client) quickWait(req Request) time.Duration {
	w := c.QuickWait
	switch {
	case w < 0:
		return 0
	case w == 0:
		w = DefaultQuickWait
	}
	switch req.Op {
	case OpPing, OpList, OpOutput, OpTail, OpInbox:
		return w
	case OpStatus:
		return w + time.Duration(max(req.WaitMS, 0))*time.Millisecond
	}
	return 0
}

// unresponsive describes the daemon at the other end of conn.
func (c *Client) unresponsive(conn net.Conn, op string, wait time.Duration) error {
	e := &UnresponsiveError{Socket: c.Socket, Op: op, PID: -1, Wait: wait}
	if uc, ok := conn.(*net.UnixConn); ok {
		if pid, err := PeerPID(uc); err == nil && pid > 0 {
			e.PID = pid
			e.State = procState(pid)
		}
	}
	return e
}

// procState is the state letter /proc gives pid, 0 when unknown.
func procState(pid int) byte {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return 0
	}
	return data[i+2]
}

// NewClient returns a client of the daemon of stateDir.
func NewClient(stateDir string) *Client { return &Client{Socket: SocketPath(stateDir)} }

// Call sends req and decodes the result into out (nil discards it). Errors:
// *NoDaemonError when nothing listens; *Error when the daemon refused the
// request (errors.Is matches the supervisor's sentinels); ctx's error when
// ctx ended first (the connection is closed, which cancels the request on
// the daemon's side); other errors for a broken connection.
func (c *Client) Call(ctx context.Context, req Request, out any) error {
	addr, closeDir, err := UnixPath(c.Socket)
	var conn net.Conn
	if err == nil {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "unix", addr)
		closeDir()
	}
	if err != nil {
		// A missing state dir (a long path is opened, a short one
		// dialled) means no daemon either: ENOENT both ways.
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
			return &NoDaemonError{Socket: c.Socket, Err: unwrapSyscall(err)}
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
			return Errorf(CodeForbidden, "connecting to %s: %v (the daemon answers only the user it runs as)", c.Socket, unwrapSyscall(err))
		}
		return fmt.Errorf("connecting to the toolbox daemon: %w", err)
	}
	defer conn.Close()
	wait := c.quickWait(req)
	if wait > 0 {
		_ = conn.SetDeadline(time.Now().Add(wait))
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	line, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding the %s request: %w", req.Op, err)
	}
	_, werr := conn.Write(append(line, '\n'))
	// Read the answer even when the write failed: the daemon may have
	// answered (a refused peer, a request too long) and closed.
	var resp Response
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&resp); err != nil {
		if werr != nil {
			err = werr
		}
		if wait > 0 && ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded) {
			return c.unresponsive(conn, req.Op, wait)
		}
		return c.broken(ctx, req.Op, err)
	}
	if !resp.OK {
		if resp.Error == nil {
			return Errorf(CodeFailed, "the daemon refused the %s request without saying why", req.Op)
		}
		return resp.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("decoding the daemon's answer to %s: %w", req.Op, err)
	}
	return nil
}

func (c *Client) broken(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// A daemon that stops answers its requests (shutting_down); one that
	// hangs up without a word died (kill -9, a crash) or was replaced.
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("the toolbox daemon on %s hung up without answering the %s request: it probably died (killed or crashed); toolbox processes list says whether one runs now, and a restarted daemon lists the processes it had as lost: %w", c.Socket, op, err)
	}
	return fmt.Errorf("talking to the toolbox daemon on %s (%s): %w", c.Socket, op, err)
}

// unwrapSyscall keeps "connection refused" rather than the dial's whole
// "dial unix /proc/self/fd/...: connect: ..." text.
func unwrapSyscall(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// Ping asks who serves the socket.
func (c *Client) Ping(ctx context.Context) (Info, error) {
	var info Info
	err := c.Call(ctx, Request{Op: OpPing}, &info)
	return info, err
}

// Start starts a service or stream tool (op start); req carries Session,
// Tool, Args, Backends, CallerEnv and Lock.
func (c *Client) Start(ctx context.Context, req Request) (supervisor.Handle, error) {
	req.Op = OpStart
	var h supervisor.Handle
	err := c.Call(ctx, req, &h)
	return h, err
}

// Send sends event to a running service (op send).
func (c *Client) Send(ctx context.Context, session, process string, event json.RawMessage) (supervisor.SendResult, error) {
	var r supervisor.SendResult
	err := c.Call(ctx, Request{Op: OpSend, Session: session, Process: process, Event: event}, &r)
	return r, err
}

// List lists the session's processes (op list).
func (c *Client) List(ctx context.Context, session string) ([]supervisor.Status, error) {
	var l []supervisor.Status
	err := c.Call(ctx, Request{Op: OpList, Session: session}, &l)
	return l, err
}

// Status returns a process's status, waiting up to wait for it to finish
// (op status).
func (c *Client) Status(ctx context.Context, session, process string, wait time.Duration) (supervisor.Status, error) {
	var st supervisor.Status
	err := c.Call(ctx, Request{Op: OpStatus, Session: session, Process: process, WaitMS: Millis(wait)}, &st)
	return st, err
}

// Output reads a page of a process's output from cursor (op output).
func (c *Client) Output(ctx context.Context, session, process string, cursor int64, max int) (supervisor.Page, error) {
	var p supervisor.Page
	err := c.Call(ctx, Request{Op: OpOutput, Session: session, Process: process, Cursor: cursor, Max: max}, &p)
	return p, err
}

// Tail returns the last n bytes of a process's output (op tail).
func (c *Client) Tail(ctx context.Context, session, process string, n int) (supervisor.Page, error) {
	var p supervisor.Page
	err := c.Call(ctx, Request{Op: OpTail, Session: session, Process: process, Bytes: n}, &p)
	return p, err
}

// Stop stops a process and returns its final status (op stop).
func (c *Client) Stop(ctx context.Context, session, process string, force bool) (supervisor.Status, error) {
	var st supervisor.Status
	err := c.Call(ctx, Request{Op: OpStop, Session: session, Process: process, Force: force}, &st)
	return st, err
}

// Wait waits until a process finishes, at most max (0: no bound but ctx),
// and returns its status (op wait); Status.Done says whether it finished.
func (c *Client) Wait(ctx context.Context, session, process string, max time.Duration) (supervisor.Status, error) {
	var st supervisor.Status
	err := c.Call(ctx, Request{Op: OpWait, Session: session, Process: process, WaitMS: Millis(max)}, &st)
	return st, err
}

// Inbox reads the session's mail after cursor (op inbox).
func (c *Client) Inbox(ctx context.Context, session string, cursor int64, max int) (supervisor.InboxPage, error) {
	var p supervisor.InboxPage
	err := c.Call(ctx, Request{Op: OpInbox, Session: session, Cursor: cursor, Max: max}, &p)
	return p, err
}

// RunCommand starts a background command (op run_command); req carries
// Session, Command, CallerEnv, WaitMS and Lock.
func (c *Client) RunCommand(ctx context.Context, req Request) (supervisor.Status, error) {
	req.Op = OpRunCommand
	var st supervisor.Status
	err := c.Call(ctx, req, &st)
	return st, err
}

// CloseSession stops every process of the session and forgets it (op
// close_session).
func (c *Client) CloseSession(ctx context.Context, session string) error {
	return c.Call(ctx, Request{Op: OpCloseSession, Session: session}, nil)
}
