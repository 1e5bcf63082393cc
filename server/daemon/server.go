package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// Timeouts of one connection.
const (
	// requestTimeout bounds the wait for the request line after connect.
	requestTimeout = 10 * time.Second
	// responseTimeout bounds writing the response (a client that does not
	// read it).
	responseTimeout = 30 * time.Second
	// drainTimeout bounds Close's wait for requests still being answered.
	drainTimeout = 5 * time.Second
	// closeWriteGrace bounds writing an answer once Close began.
	closeWriteGrace = time.Second
)

// Options configure Listen.
type Options struct {
	// StateDir holds the socket (wire.SocketName) and PIDFile; the
	// supervisor keeps its records there too. Required.
	StateDir string
	// Lock is the lock the supervisor was created with (ReadLock); the
	// daemon re-reads Lock.Path when it changes and hands the new lock to
	// the supervisor (SetLock). Required.
	Lock *LockFile
	// Logf receives what an operator may want to see (starts, stops,
	// refused peers, problems that fail no request); nil discards it.
	Logf func(format string, args ...any)
}

// Server is a listening daemon. Listen returns it, Serve answers its
// requests, Close releases the socket and the state dir.
type Server struct {
	opts   Options
	socket string
	ln     *net.UnixListener
	sockFI fs.FileInfo
	pidf   *os.File
	// uid is the only peer uid answered (the daemon's own; tests change it).
	uid  int
	info wire.Info

	lock lockWatch
	sup  *supervisor.Supervisor

	// base is the parent of every request's context; Close cancels it.
	base   context.Context
	cancel context.CancelFunc
	// wg counts the connections being answered; connMu orders its Add
	// against Close's Wait (closing set: no more Adds).
	wg      sync.WaitGroup
	connMu  sync.Mutex
	closing bool
	// active is the number of connections being answered (tests).
	active atomic.Int32

	closeOnce sync.Once
	sockMu    sync.Mutex
	sockGone  bool
}

// Listen claims opts.StateDir and binds its socket (see the package doc):
// nothing is answered until Serve. Errors: ErrRunning when another daemon
// serves the directory (or something answers on its socket); a state dir
// that cannot be created, is not this user's, or that others may enter;
// a socket that cannot be bound.
func Listen(opts Options) (*Server, error) {
	if opts.StateDir == "" || opts.Lock == nil {
		return nil, errors.New("daemon.Listen: StateDir and Lock are required")
	}
	pidf, err := claimStateDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	socket := wire.SocketPath(opts.StateDir)
	if err := clearStaleSocket(socket); err != nil {
		pidf.Close()
		return nil, err
	}
	ln, fi, err := wire.Listen(socket)
	if err != nil {
		pidf.Close()
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts: opts, socket: socket, ln: ln, sockFI: fi, pidf: pidf, uid: os.Getuid(),
		base: base, cancel: cancel,
		info: wire.Info{
			Version: wire.Version, PID: os.Getpid(), StateDir: opts.StateDir, Socket: socket,
			Lock: opts.Lock.Path, Started: time.Now().UTC().Truncate(time.Second),
		},
	}
	s.lock.current = opts.Lock
	return s, nil
}

// Socket is the path the daemon listens on.
func (s *Server) Socket() string { return s.socket }

// Info is what ping answers.
func (s *Server) Info() wire.Info { return s.info }

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// Serve answers requests with sup until ctx ends (then it stops accepting,
// removes the socket and returns nil) or accepting fails. Requests in
// progress go on after it returns: closing sup ends their waits, and Close
// waits for them. Call it once.
func (s *Server) Serve(ctx context.Context, sup *supervisor.Supervisor) error {
	if sup == nil {
		return errors.New("daemon.Serve: no supervisor")
	}
	s.sup = sup
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	defer s.removeSocket()
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and the like: wait a little rather than spin.
			s.logf("accepting a connection: %v", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if !s.track() {
			conn.Close()
			return nil
		}
		go func() {
			defer s.wg.Done()
			defer s.active.Add(-1)
			s.serveConn(conn)
		}()
	}
}

// track counts a connection to answer, unless Close began (then Close's
// wait must not see a new one).
func (s *Server) track() bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	s.active.Add(1)
	return true
}

// Close stops accepting, cancels the requests still running (after the
// supervisor was closed they end on their own), waits for them a little,
// removes the socket and releases the state dir. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.ln.Close()
		s.removeSocket()
		s.cancel()
		s.connMu.Lock()
		s.closing = true
		s.connMu.Unlock()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(drainTimeout):
			s.logf("some requests were still being answered at exit")
		}
		s.pidf.Close()
	})
	return nil
}

// removeSocket removes serve.sock if it is still the one this daemon bound.
func (s *Server) removeSocket() {
	s.sockMu.Lock()
	defer s.sockMu.Unlock()
	if s.sockGone {
		return
	}
	s.sockGone = true
	if fi, err := os.Lstat(s.socket); err == nil && os.SameFile(fi, s.sockFI) {
		os.Remove(s.socket)
	}
}

// serveConn answers the one request of conn.
func (s *Server) serveConn(conn *net.UnixConn) {
	defer conn.Close()
	// A client that never finishes its request, or never reads its
	// answer, must not hold Close: once it begins, a read still waiting
	// ends at once and the answer is given closeWriteGrace (a silent
	// connection kept SIGTERM of serve waiting out drainTimeout).
	defer context.AfterFunc(s.base, func() {
		conn.SetReadDeadline(time.Unix(1, 0))
		conn.SetWriteDeadline(time.Now().Add(closeWriteGrace))
	})()
	// The request is read (not parsed) before the peer is checked, so that
	// a refused client gets its answer rather than a reset connection.
	conn.SetReadDeadline(time.Now().Add(requestTimeout))
	r := bufio.NewReader(conn)
	line, err := readLine(r, wire.MaxRequestBytes)
	if uid, perr := wire.PeerUID(conn); perr != nil || uid != s.uid {
		if perr == nil {
			s.logf("refused a connection from uid %d (only uid %d may use this daemon)", uid, s.uid)
			perr = fmt.Errorf("only uid %d may use this daemon; you are uid %d", s.uid, uid)
		}
		s.respond(conn, nil, &wire.Error{Code: wire.CodeForbidden, Message: perr.Error()})
		return
	}
	if err != nil {
		switch {
		case s.base.Err() != nil:
			s.respond(conn, nil, wire.Errorf(wire.CodeShuttingDown, "the daemon is stopping; the request was not read"))
		case !errors.Is(err, io.EOF):
			s.respond(conn, nil, wire.Errorf(wire.CodeBadRequest, "reading the request: %v", err))
		}
		return
	}
	if s.base.Err() == nil {
		conn.SetReadDeadline(time.Time{})
	}
	var req wire.Request
	if err := json.Unmarshal(line, &req); err != nil {
		s.respond(conn, nil, wire.Errorf(wire.CodeBadRequest, "the request is not a JSON object: %v", err))
		return
	}
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	// The client waits for the answer without writing: anything that ends
	// the read (EOF, reset) means it hung up, which cancels the request.
	go func() {
		io.Copy(io.Discard, r)
		cancel()
	}()
	result, err := s.handle(ctx, req)
	s.respond(conn, result, wire.ErrorOf(err))
}

// respond writes the response line: result when e is nil, else e.
func (s *Server) respond(conn *net.UnixConn, result any, e *wire.Error) {
	resp := wire.Response{OK: e == nil, Error: e}
	if e == nil {
		raw, err := json.Marshal(result)
		if err != nil {
			resp = wire.Response{Error: wire.Errorf(wire.CodeFailed, "encoding the answer: %v", err)}
		} else {
			resp.Result = raw
		}
	}
	line, err := json.Marshal(resp)
	if err != nil {
		s.logf("encoding a response: %v", err)
		return
	}
	conn.SetWriteDeadline(time.Now().Add(responseTimeout))
	if s.base.Err() != nil { // Close began (its AfterFunc may have run first)
		conn.SetWriteDeadline(time.Now().Add(closeWriteGrace))
	}
	conn.Write(append(line, '\n'))
}

// errTooLong: a request line over the limit.
var errTooLong = errors.New("request longer than the limit")

// readLine reads one line of at most max bytes, without its newline. A
// final line without a newline counts (the client may half-close).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var buf bytes.Buffer
	for {
		chunk, err := r.ReadSlice('\n')
		buf.Write(chunk)
		if buf.Len() > max+1 {
			return nil, fmt.Errorf("%w (%d bytes)", errTooLong, max)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && buf.Len() > 0:
			return buf.Bytes(), nil
		default:
			return nil, err
		}
	}
}
