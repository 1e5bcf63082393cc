package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/protocol"
)

// echoScript answers each input line with {"echo": LINE} and records it in
// the output; "quit" ends it; "mute" is read but not answered.
const echoScript = `echo ready
while IFS= read -r line; do
  case "$line" in
    *quit*) echo '{"echo":"bye"}'; exit 0;;
    *mute*) ;;
    *) printf '{"echo":%s}\n' "$line";;
  esac
done`

var opSchema = json.RawMessage(`{"type":"object","properties":{"op":{"enum":["pattern","mute","quit"]},"value":{"type":"string"}},"required":["op"],"additionalProperties":false}`)

func echoService(cancel *protocol.Cancel) *protocol.Describe {
	return describe("echo", protocol.ProcessService, &protocol.Process{
		Ready:  readyLineAt(`^ready$`),
		Input:  &protocol.Input{Framing: "jsonl", Event: opSchema},
		Output: &protocol.Output{Framing: "jsonl", Event: json.RawMessage(`{"type":"object","required":["echo"]}`)},
	}, &protocol.Runtime{Cancel: cancel})
}

// startEcho starts the echo service in session sess.
func startEcho(t *testing.T) (*Supervisor, Handle) {
	t.Helper()
	f := newFixture(t)
	f.AddTool(t, "echo", echoScript, echoService(nil))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "echo", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

func TestSendAnswersWithTheEventsEmitted(t *testing.T) {
	s, h := startEcho(t)
	res, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{ "op": "pattern", "value": "ERR" }`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != SendAnswered || len(res.Events) != 1 || string(res.Events[0].Event) != `{"echo":{"op":"pattern","value":"ERR"}}` {
		t.Errorf("answer = %+v", res)
	}
	begin := time.Now()
	res, err = s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{"op":"mute"}`))
	if err != nil || res.Status != SendAccepted || len(res.Events) != 0 {
		t.Errorf("unanswered send = %+v, %v", res, err)
	}
	if d := time.Since(begin); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("accepted after %s, want about the quiet window", d)
	}
}

func TestSendRefusesAnEventThatBreaksTheSchema(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", echoScript, echoService(nil))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "echo", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := mustStatus(t, s, "sess", h.Process).Output.Head
	for _, ev := range []string{`{"op":"explode"}`, `{"value":"x"}`, `{"op":"pattern",`, ``, `"pattern"`} {
		if _, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(ev)); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("Send(%s) error = %v, want ErrInvalidEvent", ev, err)
		}
	}
	// Nothing was written: the service echoes every line it reads.
	if _, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{"op":"pattern"}`)); err != nil {
		t.Fatal(err)
	}
	pg, _ := s.Output("sess", h.Process, before, 0)
	if got := pg.Text(); got != `{"echo":{"op":"pattern"}}`+"\n" {
		t.Errorf("output after the refused sends = %q, want only the valid event's echo", got)
	}
}

func TestSendRefusals(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", echoScript, echoService(nil))
	f.AddTool(t, "deaf", `exec sleep 30`, describe("deaf", protocol.ProcessService, nil, nil))
	s := f.supervisor(t)
	deaf, err := s.Start(ctxT(t), "sess", "deaf", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctxT(t), "sess", deaf.Process, json.RawMessage(`{}`)); !errors.Is(err, ErrNoInput) {
		t.Errorf("send to a tool without input: %v", err)
	}
	h, err := s.Start(ctxT(t), "sess", "echo", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stop(ctxT(t), "sess", h.Process, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{"op":"pattern"}`)); !errors.Is(err, ErrNotRunning) {
		t.Errorf("send to a stopped process: %v", err)
	}
	if _, err := s.Send(ctxT(t), "sess", "p000000", json.RawMessage(`{"op":"pattern"}`)); !errors.Is(err, ErrUnknownProcess) {
		t.Errorf("send to an unknown process: %v", err)
	}
}

func TestSendLinesFraming(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "lines", `echo ready; while IFS= read -r l; do echo "got $l"; done`,
		describe("lines", protocol.ProcessService, &protocol.Process{
			Ready:  readyLineAt(`^ready$`),
			Input:  &protocol.Input{Framing: "lines"},
			Output: &protocol.Output{Framing: "lines"},
		}, nil))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "lines", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`"hello world"`))
	if err != nil || len(res.Events) != 1 || string(res.Events[0].Event) != `"got hello world"` {
		t.Errorf("lines send = %+v, %v", res, err)
	}
	for _, bad := range []string{`{"a":1}`, `"two\nlines"`} {
		if _, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(bad)); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("Send(%s) = %v, want ErrInvalidEvent", bad, err)
		}
	}
}

func TestCancelBySendingAnEvent(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", echoScript, echoService(&protocol.Cancel{Send: json.RawMessage(`{"op": "quit"}`)}))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "echo", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Stop(ctxT(t), "sess", h.Process, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != StateStopped || st.ExitCode == nil || *st.ExitCode != 0 || !strings.Contains(st.Stdout.Text, "bye") {
		t.Errorf("after a send cancel: %+v exit %v tail %q", st.Handle, st.ExitCode, st.Stdout.Text)
	}
}

// Two clients race Stop, Send, Output and Status on one handle; the race
// detector watches, and the process ends stopped exactly once.
func TestRacingClientsOnOneHandle(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", echoScript, echoService(nil))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "echo", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stops := make(chan Status, 4)
	for i := range 4 {
		wg.Go(func() {
			for range 20 {
				_, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{"op":"pattern","value":"x"}`))
				if err != nil && !errors.Is(err, ErrNotRunning) {
					t.Errorf("send: %v", err)
				}
				if _, err := s.Output("sess", h.Process, 0, 100); err != nil {
					t.Errorf("output: %v", err)
				}
				s.Tail("sess", h.Process, 10)
				s.List("sess")
			}
		})
		wg.Go(func() {
			time.Sleep(time.Duration(i*30) * time.Millisecond)
			st, err := s.Stop(ctxT(t), "sess", h.Process, i%2 == 1)
			if err != nil {
				t.Errorf("stop: %v", err)
			}
			stops <- st
		})
	}
	wg.Wait()
	close(stops)
	var first *Status
	for st := range stops {
		if st.Status != StateStopped {
			t.Errorf("a stop returned %s", st.Status)
		}
		if first == nil {
			first = &st
		} else if !st.Since.Equal(first.Since) {
			t.Errorf("stops saw different final states: %v and %v", st.Since, first.Since)
		}
	}
	inbox, _ := s.Inbox("sess", 0, 0)
	exits := 0
	for _, m := range inbox.Mails {
		if m.Kind == MailExit {
			exits++
		}
	}
	if exits != 1 {
		t.Errorf("%d completion mails, want 1", exits)
	}
}

func TestDeclaredSchemasNeedACompiler(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", echoScript, echoService(nil))
	s := f.supervisor(t, func(c *Config) { c.CompileSchema = nil })
	if _, err := s.Start(ctxT(t), "sess", "echo", nil, StartOptions{}); !errors.Is(err, launcher.ErrNeedsValidator) {
		t.Errorf("Start without a schema compiler: %v", err)
	}
	if _, err := RunStream(ctxT(t), StreamRequest{LockPath: f.LockPath, Lock: f.Lock, Name: "echo"}); !errors.Is(err, launcher.ErrNeedsValidator) {
		t.Errorf("RunStream without a schema compiler: %v", err)
	}
}

// copyService copies its stdin to the file "received" in its directory,
// but only once the file "go" exists there: until then it reads nothing.
func copyService() *protocol.Describe {
	return describe("copy", protocol.ProcessService, &protocol.Process{
		Ready: readyLineAt(`^ready$`),
		Input: &protocol.Input{Framing: "jsonl"},
	}, nil)
}

const copyScript = `echo ready
cd "$(dirname "$0")"
while [ ! -e go ]; do sleep 0.02; done
exec cat > received`

// received waits until the file "received" of f's tools holds want.
func received(t *testing.T, f *fixture, want string) {
	t.Helper()
	path := filepath.Join(f.Dir, "tools", "received")
	var got []byte
	testenv.Eventually(t, 10*time.Second, "the service to read every event", func() bool {
		got, _ = os.ReadFile(path)
		return len(got) >= len(want)
	})
	if string(got) != want {
		t.Errorf("the service read %d bytes, not the %d sent whole (first difference at %d)", len(got), len(want), firstDiff(string(got), want))
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSendRefusesAnOversizedEvent: an event of 10 MiB is refused before
// anything is written (it used to be written in part, leaving the
// service's stdin unusable while it showed running); an event at the
// limit is written whole.
func TestSendRefusesAnOversizedEvent(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "copy", copyScript, copyService())
	locktest.WriteFile(t, filepath.Join(f.Dir, "tools", "go"), "", 0o644)
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "copy", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 10<<20) + `"`)
	if _, err := s.Send(ctxT(t), "sess", h.Process, big); !errors.Is(err, ErrInvalidEvent) || !strings.Contains(err.Error(), fmt.Sprintf("more than the %d a send writes", MaxSendBytes)) {
		t.Fatalf("Send(10 MiB) = %v, want ErrInvalidEvent naming the limit", err)
	}
	atLimit := `"` + strings.Repeat("y", MaxSendBytes-3) + `"` // and its newline
	if _, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(atLimit)); err != nil {
		t.Fatalf("Send at the limit: %v", err)
	}
	received(t, f, atLimit+"\n")
	if st := mustStatus(t, s, "sess", h.Process); st.Status != StateRunning {
		t.Errorf("status %s", st.Status)
	}
}

// TestSendNeverBreaksThePipe: a service that does not read fills its
// stdin; the send that does not fit fails with nothing written, the
// service still running; once it reads, every event sent arrives whole.
func TestSendNeverBreaksThePipe(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "copy", copyScript, copyService())
	s := f.supervisor(t, func(c *Config) { c.Timing.StdinWrite = 300 * time.Millisecond })
	h, err := s.Start(ctxT(t), "sess", "copy", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	event := `"` + strings.Repeat("z", 300<<10) + `"`
	sent := 0
	for ; sent < 20; sent++ {
		if _, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(event)); err != nil {
			if !strings.Contains(err.Error(), "did not read its stdin") || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("send %d: %v", sent+1, err)
			}
			break
		}
	}
	if sent == 0 || sent == 20 {
		t.Fatalf("%d sends went through before the pipe was full", sent)
	}
	if st := mustStatus(t, s, "sess", h.Process); st.Status != StateRunning {
		t.Fatalf("status %s after a send that did not fit", st.Status)
	}
	locktest.WriteFile(t, filepath.Join(f.Dir, "tools", "go"), "", 0o644)
	if _, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`"last"`)); err != nil {
		t.Fatalf("a send once the service reads: %v", err)
	}
	received(t, f, strings.Repeat(event+"\n", sent)+`"last"`+"\n")
}

// TestConcurrentSendsGetTheirOwnAnswers: sends to one service at once
// (several agents' calls, or one agent's parallel tool calls) each get the
// answer to their own event, never the events other sends caused: with
// ten at once, every answer held all ten events (an event came back in up
// to 60 answers of 60 sends through serve).
func TestConcurrentSendsGetTheirOwnAnswers(t *testing.T) {
	s, h := startEcho(t)
	const n = 10
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			value := fmt.Sprintf("v%d", i)
			res, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{"op":"pattern","value":"`+value+`"}`))
			if err != nil {
				t.Errorf("send %s: %v", value, err)
				return
			}
			want := `{"echo":{"op":"pattern","value":"` + value + `"}}`
			var got []string
			for _, e := range res.Events {
				got = append(got, string(e.Event))
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("send %s answered %v, want only %s", value, got, want)
			}
		})
	}
	wg.Wait()
}
