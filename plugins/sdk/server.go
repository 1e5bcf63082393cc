package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
	"github.com/toolbox-dev/toolbox/protocol"
)

// server adapts a Tool to the gRPC Tool service.
type server struct {
	pb.UnimplementedToolServer
	tool Tool
	doc  protocol.Describe
	// raw is doc as JSON, or the error marshalling it.
	raw    []byte
	rawErr error
}

// NewServer returns the gRPC Tool service serving t, as Serve does. It is
// exported for tests of plugins that run client and server in one process
// (plugin.TestPluginGRPCConn with proto.PluginSet(sdk.NewServer(t))).
func NewServer(t Tool) pb.ToolServer {
	s := &server{tool: t, doc: t.Describe()}
	s.raw, s.rawErr = json.Marshal(s.doc)
	return s
}

func (s *server) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	if s.rawErr != nil {
		return nil, status.Errorf(codes.Internal, "encoding the describe document: %v", s.rawErr)
	}
	return &pb.DescribeResponse{Document: s.raw}, nil
}

func (s *server) Check(ctx context.Context, _ *pb.CheckRequest) (resp *pb.CheckResponse, err error) {
	defer func() {
		if v := recover(); v != nil {
			logPanic("Check", v)
			resp = &pb.CheckResponse{Ok: false, Detail: fmt.Sprintf("check panicked: %v", v), Fix: "report this to the tool's author"}
		}
	}()
	r := s.tool.Check(ctx)
	return &pb.CheckResponse{Ok: r.OK, Detail: r.Detail, Fix: r.Fix}, nil
}

func (s *server) Run(req *pb.RunRequest, stream grpc.ServerStreamingServer[pb.RunResponse]) error {
	args, err := s.args(req)
	if err != nil {
		return err
	}
	out := &emitter{send: stream.Send}
	code, err := call("Run", func() (int, error) { return s.tool.Run(stream.Context(), args, out) })
	return out.exit(code, err)
}

func (s *server) Session(stream grpc.BidiStreamingServer[pb.SessionRequest, pb.RunResponse]) error {
	svc, ok := s.tool.(Service)
	if !ok {
		return status.Error(codes.Unimplemented, "this tool is not a service")
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "the first message of a session must be a start")
	}
	args, err := s.args(start)
	if err != nil {
		return err
	}
	ctx := stream.Context()
	in := make(chan []byte, 16)
	go func() {
		defer close(in)
		for {
			m, err := stream.Recv()
			if err != nil {
				return // the host closed its input, or the call is over
			}
			ev := m.GetEvent()
			if ev == nil {
				continue // a second start carries nothing for the service
			}
			select {
			case in <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	out := &emitter{send: stream.Send}
	code, err := call("Serve", func() (int, error) { return svc.Serve(ctx, args, in, out) })
	return out.exit(code, err)
}

// args decodes and validates a call's arguments against the describe
// document; a refusal is an InvalidArgument status carrying every problem.
func (s *server) args(req *pb.RunRequest) (Args, error) {
	declared, ok := s.doc.CommandArgs(req.GetCommand())
	if !ok {
		return Args{}, status.Errorf(codes.InvalidArgument, "unknown command %q", req.GetCommand())
	}
	raw := req.GetArgs()
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	values, err := protocol.DecodeArgs(raw)
	if err == nil {
		err = protocol.ValidateArgs(declared, values)
	}
	if err != nil {
		return Args{}, status.Error(codes.InvalidArgument, err.Error())
	}
	for k, v := range values {
		if v == nil {
			delete(values, k) // null is absent (protocol.ValidateArgs)
		}
	}
	return Args{Command: req.GetCommand(), Values: values}, nil
}

// panicExitCode is the exit code of a call that panicked, as for a Go
// program that dies of a panic.
const panicExitCode = 2

// call runs fn, turning a panic into panicExitCode and an error.
func call(what string, fn func() (int, error)) (code int, err error) {
	defer func() {
		if v := recover(); v != nil {
			logPanic(what, v)
			code, err = panicExitCode, fmt.Errorf("panic: %v", v)
		}
	}()
	return fn()
}

// exitStatus is the status a host sees for Run's return values: an error
// with code 0 is code 1, and its text is the error text.
func exitStatus(code int, err error) (int, string) {
	if err == nil {
		return code, ""
	}
	if code == 0 {
		code = 1
	}
	return code, err.Error()
}

func logPanic(what string, v any) {
	Logger().Error("recovered a panic", "in", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
}

// emitter sends a call's output on its stream, then its exit.
type emitter struct {
	mu   sync.Mutex
	send func(*pb.RunResponse) error
	done bool
}

// errCallOver is returned by an Emitter used after its call returned.
var errCallOver = errors.New("the call is over: output after Run returned is dropped")

// maxChunk bounds one chunk message.
const maxChunk = 256 << 10

func (e *emitter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), maxChunk)]
		if err := e.sendMsg(&pb.RunResponse{Msg: &pb.RunResponse_Chunk{Chunk: c}}); err != nil {
			return n, err
		}
		n += len(c)
		p = p[len(c):]
	}
	return n, nil
}

func (e *emitter) Emit(event any) error {
	data, err := json.Marshal(event)
	if err != nil {
		return fmt.Errorf("encoding event: %w", err)
	}
	return e.sendMsg(&pb.RunResponse{Msg: &pb.RunResponse_Event{Event: data}})
}

func (e *emitter) sendMsg(m *pb.RunResponse) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return errCallOver
	}
	return e.send(m)
}

// exit sends the final message and closes the emitter.
func (e *emitter) exit(code int, err error) error {
	code, msg := exitStatus(code, err)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done = true
	return e.send(&pb.RunResponse{Msg: &pb.RunResponse_Exit{Exit: &pb.Exit{Code: int32(code), Error: msg}}})
}
