package mcpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// A server that fails in the middle of a call (dies, dies half-way through
// its answer, writes half an answer and hangs, never answers) ends that
// call: at once when its output ends, when the call's context ends
// otherwise; the session is then broken or still serves, and Close
// returns. The twin: the same call answered whole.
func TestServerFaultsMidCall(t *testing.T) {
	die := func(s *rawServer) { _ = s.out.(*os.File).Close() }
	half := func(s *rawServer, id json.RawMessage) {
		_ = s.sendRaw(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"te`)
	}
	for _, tc := range []struct {
		name string
		call func(s *rawServer, id json.RawMessage)
		// prompt: the call must end before its context does.
		prompt, ok bool
	}{
		{"answers", func(s *rawServer, id json.RawMessage) { _ = s.answer(id, `{"content":[{"type":"text","text":"hi"}]}`) }, true, true},
		{"dies", func(s *rawServer, _ json.RawMessage) { die(s) }, true, false},
		{"dies-mid-answer", func(s *rawServer, id json.RawMessage) { half(s, id); die(s) }, true, false},
		{"half-answer-then-hangs", half, false, false},
		{"never-answers", func(*rawServer, json.RawMessage) {}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := connectRaw(t, &rawServer{call: tc.call}, nil)
			defer s.Close()
			const deadline = 500 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			var err error
			begun := time.Now()
			within(t, testenv.WaitBound, "the call", func() { _, err = s.Call(ctx, "echo", map[string]any{}) })
			if tc.ok != (err == nil) {
				t.Fatalf("Call = %v", err)
			}
			if tc.prompt && errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Call = %v after %s: it waited for its context, not the server's end", err, time.Since(begun))
			}
			if !tc.ok && !tc.prompt && !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("Call = %v", err)
			}
			within(t, testenv.WaitBound, "Close", func() { s.Close() })
		})
	}
}
