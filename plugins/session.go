package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
)

// Session is a running service call (process.mode "service"): input events
// go in with Send, output arrives through the onOutput function given to
// StartSession, and the call ends with a Result like Run's. Its methods are
// safe for concurrent use.
type Session struct {
	c      *Client
	stream grpc.BidiStreamingClient[pb.SessionRequest, pb.RunResponse]
	cancel context.CancelFunc

	sendMu sync.Mutex
	done   chan struct{}
	res    Result
	err    error
}

// errSessionOver is returned by Send and CloseInput once the session ended.
var errSessionOver = errors.New("the session is over")

// StartSession starts a service call of command ("" is the tool itself)
// with args, as RunCommand does. onOutput, when non-nil, receives each
// Output in order, on a goroutine of the Session. The session lives until
// the service returns, ctx ends, or Cancel is called; Wait returns how it
// ended. A plugin whose tool is not a service fails the session with a
// gRPC Unimplemented error, reported by Wait.
func (c *Client) StartSession(ctx context.Context, command string, args map[string]any, onOutput func(Output)) (*Session, error) {
	req, err := runRequest(command, args)
	if err != nil {
		return nil, fmt.Errorf("starting a session of plugin %q: %w", c.path, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := c.tool.Session(sctx)
	if err != nil {
		cancel()
		return nil, c.rpcError(ctx, "starting a session of", err)
	}
	if err := stream.Send(&pb.SessionRequest{Msg: &pb.SessionRequest_Start{Start: req}}); err != nil {
		cancel()
		return nil, c.rpcError(ctx, "starting a session of", err)
	}
	s := &Session{c: c, stream: stream, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer cancel()
		s.res, s.err = c.drain(sctx, "serving", stream.Recv, onOutput)
	}()
	return s, nil
}

// Send writes one input event (one JSON value for "jsonl" input framing,
// one line without its newline for "lines"). It does not validate the
// event: the launcher validates against process.input.event first. It
// fails once the input is closed or the session is over.
func (s *Session) Send(event []byte) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	select {
	case <-s.done:
		return errSessionOver
	default:
	}
	if err := s.stream.Send(&pb.SessionRequest{Msg: &pb.SessionRequest_Event{Event: event}}); err != nil {
		return fmt.Errorf("sending to plugin %q: %w", s.c.path, err)
	}
	return nil
}

// CloseInput closes the service's input; the service sees its input
// channel closed and usually ends.
func (s *Session) CloseInput() error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	select {
	case <-s.done:
		return errSessionOver
	default:
	}
	if err := s.stream.CloseSend(); err != nil {
		return fmt.Errorf("closing the input of plugin %q: %w", s.c.path, err)
	}
	return nil
}

// Cancel ends the session: the service's context is cancelled, and Wait
// returns context.Canceled unless the session had already ended.
func (s *Session) Cancel() { s.cancel() }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Wait waits for the session to end and returns its Result, or why the
// call failed (as for RunCommand).
func (s *Session) Wait() (Result, error) {
	<-s.done
	return s.res, s.err
}
