package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
)

// ErrArguments: the plugin refused the call's arguments (they fail its
// describe document). The launcher validates before calling, so this means
// the lock and the plugin disagree.
var ErrArguments = errors.New("plugin refused the arguments")

// OutputKind says what an Output carries.
type OutputKind int

// Output kinds.
const (
	// Chunk is a piece of the result bytes: a oneshot tool's stdout, or
	// output framed as "lines" or "chunks".
	Chunk OutputKind = iota + 1
	// Event is one output event: a single JSON value without the newline
	// of jsonl framing. It is not validated here: the launcher validates it
	// against the declared process.output.event schema, as for exec tools.
	Event
)

// Output is one piece of a call's output, delivered as it arrives.
type Output struct {
	Kind OutputKind
	Data []byte
}

// Result is how a call ended: ExitCode 0 is success; Error is the tool's
// own explanation of a failure (the counterpart of an exec tool's stderr
// tail), empty on success.
type Result struct {
	ExitCode int
	Error    string
}

// Describe fetches the plugin's describe document and validates it with
// validate.ParseDescribe, the same rules as an executable's. It returns the
// parsed document and the raw JSON. An invalid document is ErrInvalidDescribe
// (raw is still returned, for the message); a plugin that dies during the
// call is ErrPluginExited.
func (c *Client) Describe(ctx context.Context) (*protocol.Describe, []byte, error) {
	resp, err := c.tool.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return nil, nil, c.rpcError(ctx, "describing", err)
	}
	raw := resp.GetDocument()
	d, err := validate.ParseDescribe(raw)
	if err != nil {
		return nil, raw, fmt.Errorf("describing plugin %q: %w: %w", c.path, ErrInvalidDescribe, err)
	}
	return d, raw, nil
}

// Check runs the plugin's self-test. Errors are those of Describe, except
// ErrInvalidDescribe.
func (c *Client) Check(ctx context.Context) (protocol.CheckResult, error) {
	resp, err := c.tool.Check(ctx, &pb.CheckRequest{})
	if err != nil {
		return protocol.CheckResult{}, c.rpcError(ctx, "checking", err)
	}
	return protocol.CheckResult{OK: resp.GetOk(), Detail: resp.GetDetail(), Fix: resp.GetFix()}, nil
}

// Run calls the tool itself (no command) with args; see RunCommand.
func (c *Client) Run(ctx context.Context, args map[string]any, onOutput func(Output)) (Result, error) {
	return c.RunCommand(ctx, "", args, onOutput)
}

// RunCommand calls command (an entry of the describe document's
// "commands"; "" is the tool itself) with args, the argument values by name
// (json.Number, string or bool; nil means none). onOutput, when non-nil,
// receives each Output in order, on the calling goroutine, before Run
// returns.
//
// A failing tool is a Result with a non-zero ExitCode and a nil error. The
// error is non-nil only when the call itself failed: ctx's error when ctx
// ended (the plugin keeps running; Close or Kill it), ErrArguments,
// ErrPluginExited when the plugin died (a crash, a panic outside the SDK's
// recovery, an exit mid-stream), ErrNoExit, ErrClosed.
func (c *Client) RunCommand(ctx context.Context, command string, args map[string]any, onOutput func(Output)) (Result, error) {
	req, err := runRequest(command, args)
	if err != nil {
		return Result{}, fmt.Errorf("running plugin %q: %w", c.path, err)
	}
	stream, err := c.tool.Run(ctx, req)
	if err != nil {
		return Result{}, c.rpcError(ctx, "running", err)
	}
	return c.drain(ctx, "running", stream.Recv, onOutput)
}

func runRequest(command string, args map[string]any) (*pb.RunRequest, error) {
	if args == nil {
		args = map[string]any{}
	}
	data, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encoding arguments: %w", err)
	}
	return &pb.RunRequest{Command: command, Args: data}, nil
}

// drain reads a Run or Session response stream up to its Exit.
func (c *Client) drain(ctx context.Context, what string, recv func() (*pb.RunResponse, error), onOutput func(Output)) (Result, error) {
	for {
		msg, err := recv()
		if err == io.EOF {
			if ex := c.r.exitDescription(0); ex != stillRunning {
				return Result{}, fmt.Errorf("%s plugin %q: %w (%s)%s", what, c.path, ErrPluginExited, ex, stderrNote(c.r.stderrTail()))
			}
			return Result{}, fmt.Errorf("%s plugin %q: %w", what, c.path, ErrNoExit)
		}
		if err != nil {
			return Result{}, c.rpcError(ctx, what, err)
		}
		switch m := msg.GetMsg().(type) {
		case *pb.RunResponse_Chunk:
			if onOutput != nil {
				onOutput(Output{Kind: Chunk, Data: m.Chunk})
			}
		case *pb.RunResponse_Event:
			if onOutput != nil {
				onOutput(Output{Kind: Event, Data: m.Event})
			}
		case *pb.RunResponse_Exit:
			return Result{ExitCode: int(m.Exit.GetCode()), Error: m.Exit.GetError()}, nil
		}
	}
}

// rpcError explains a failed RPC: ctx's own error first, then a refusal of
// the arguments, then a dead plugin (with how it ended), else the gRPC error.
func (c *Client) rpcError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s plugin %q: %w", what, c.path, ctx.Err())
	}
	// gRPC carries the caller's deadline to the plugin, whose side may end
	// the stream a moment before ctx itself is done: it is the same
	// deadline, reported as ctx would.
	if s, ok := status.FromError(err); ok && s.Code() == codes.DeadlineExceeded {
		if _, has := ctx.Deadline(); has {
			return fmt.Errorf("%s plugin %q: %w", what, c.path, context.DeadlineExceeded)
		}
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.InvalidArgument {
		return fmt.Errorf("%s plugin %q: %w: %s", what, c.path, ErrArguments, s.Message())
	}
	return c.callError(what, err)
}
