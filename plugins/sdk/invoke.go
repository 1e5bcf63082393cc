package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
)

// Invoke runs one call of t in-process, through the same steps as a call
// from a host: args (a JSON object; nil means {}) are decoded and validated
// against the args that t's describe document declares for command ("" is
// the tool itself), then t.Run is called with out, a panic is recovered.
// The Result is what a host would get. The error is non-nil only when the
// call was refused before Run (unknown command, bad arguments). It is meant
// for tool authors' tests and examples.
func Invoke(ctx context.Context, t Tool, command string, args []byte, out Emitter) (Result, error) {
	s := &server{tool: t, doc: t.Describe()}
	a, err := s.args(&pb.RunRequest{Command: command, Args: args})
	if err != nil {
		return Result{}, fmt.Errorf("calling %q: %w", s.doc.Slug, err)
	}
	code, msg := exitStatus(call("Run", func() (int, error) { return t.Run(ctx, a, out) }))
	return Result{ExitCode: code, Error: msg}, nil
}

// Result is how a call ended, as a host sees it: ExitCode 0 is success;
// Error is the tool's own explanation of a failure (the counterpart of an
// exec tool's stderr tail), empty on success.
type Result struct {
	ExitCode int
	Error    string
}

// Recorder is an Emitter that keeps all output in memory, for tests and
// examples. The zero value is ready; it is safe for concurrent use, and its
// fields may be read once the call has returned.
type Recorder struct {
	mu sync.Mutex
	// Output holds the result bytes written.
	Output bytes.Buffer
	// Events holds the events emitted, in order.
	Events []json.RawMessage
}

var _ Emitter = (*Recorder)(nil)

// Write appends p to Output.
func (r *Recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Output.Write(p)
}

// Emit encodes event as Serve would and appends it to Events.
func (r *Recorder) Emit(event any) error {
	data, err := json.Marshal(event)
	if err != nil {
		return fmt.Errorf("encoding event: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Events = append(r.Events, data)
	return nil
}
