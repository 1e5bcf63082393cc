package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// TestServiceStartSendStop: a start returns a handle, the send companion
// answers with the service's events, processes lists, reads and stops it,
// and the inbox (and the client's notifications) hold its mail.
func TestServiceStartSendStop(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "watch", serviceScript, serviceDescribe("watch"))
	f.AddTool(t, "other", serviceScript, serviceDescribe("other"))
	e := f.start(t, nil)
	if err := e.cs.SetLoggingLevel(ctx(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: InboxURI}); err != nil {
		t.Fatal(err)
	}

	res := e.call("watch", nil)
	wantOK(t, res)
	var st Started
	decode(t, res, &st)
	if st.Tool != "watch" || st.Status != supervisor.StateRunning || st.Send != "watch_send" || !strings.HasPrefix(st.Process, "p") {
		t.Fatalf("handle = %+v", st)
	}

	res = e.call("watch_send", map[string]any{"process": st.Process, "event": map[string]any{"op": "ping"}})
	wantOK(t, res)
	var sent supervisor.SendResult
	decode(t, res, &sent)
	if sent.Status != supervisor.SendAnswered || len(sent.Events) != 1 || !sameJSON(sent.Events[0].Event, `{"got":{"op":"ping"}}`) {
		t.Errorf("send = %+v", sent)
	}

	// An event that breaks the declared schema, and a process of another
	// family, are tool errors; nothing is written.
	fl := wantFailure(t, e.call("watch_send", map[string]any{"process": st.Process, "event": map[string]any{"nope": 1}}))
	if !strings.Contains(fl.Error, "invalid event") {
		t.Errorf("bad event: %+v", fl)
	}
	var other Started
	decode(t, e.call("other", nil), &other)
	fl = wantFailure(t, e.call("watch_send", map[string]any{"process": other.Process, "event": map[string]any{"op": "x"}}))
	if !strings.Contains(fl.Error, "other_send") {
		t.Errorf("send to another family: %+v", fl)
	}

	var list ProcessList
	decode(t, e.call("processes", map[string]any{"action": "list"}), &list)
	if len(list.Processes) != 2 || list.Processes[0].Process != st.Process {
		t.Errorf("list = %+v", list)
	}
	var pg supervisor.Page
	decode(t, e.call("processes", map[string]any{"action": "output", "process": st.Process, "cursor": 0}), &pg)
	if !strings.Contains(pg.Text(), "ready\n") || !strings.Contains(pg.Text(), `"got"`) {
		t.Errorf("output = %q", pg.Text())
	}

	res = e.call("processes", map[string]any{"action": "stop", "process": st.Process})
	wantOK(t, res)
	var stopped supervisor.Status
	decode(t, res, &stopped)
	if stopped.Status != supervisor.StateStopped || !stopped.Done {
		t.Errorf("stop = %+v", stopped)
	}

	// The inbox holds the events' digest and the completion.
	var inbox supervisor.InboxPage
	testenv.Eventually(t, 5*time.Second, "the exit mail", func() bool {
		decode(t, e.call("inbox", map[string]any{"cursor": 0}), &inbox)
		return hasMail(inbox.Mails, supervisor.MailExit, st.Process)
	})
	if !hasMail(inbox.Mails, supervisor.MailEvents, st.Process) {
		t.Errorf("inbox = %+v, want the events mail", inbox.Mails)
	}
	// Reading again from "next" gives nothing new; nothing was consumed.
	var again supervisor.InboxPage
	decode(t, e.call("inbox", map[string]any{"cursor": inbox.Next}), &again)
	if len(again.Mails) != 0 {
		t.Errorf("inbox after next = %+v", again.Mails)
	}

	// The same mail reached the client as logging notifications, and the
	// subscribed inbox resource was updated and reads the same mail.
	testenv.Eventually(t, 5*time.Second, "logging notifications", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.logs) >= len(inbox.Mails) && e.updates > 0
	})
	e.mu.Lock()
	first, _ := json.Marshal(e.logs[0])
	e.mu.Unlock()
	if !strings.Contains(string(first), `"process":"`+st.Process+`"`) {
		t.Errorf("first logging notification = %s", first)
	}
	rr, err := e.cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: InboxURI})
	if err != nil {
		t.Fatal(err)
	}
	var fromResource supervisor.InboxPage
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &fromResource); err != nil {
		t.Fatal(err)
	}
	if !hasMail(fromResource.Mails, supervisor.MailExit, st.Process) {
		t.Errorf("inbox resource = %s", rr.Contents[0].Text)
	}
}

// sameJSON says a and b are the same JSON value.
func sameJSON(a []byte, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

func hasMail(mails []supervisor.Mail, kind, process string) bool {
	for _, m := range mails {
		if m.Kind == kind && m.Process == process {
			return true
		}
	}
	return false
}

// TestProcessesArguments: arguments the processes tool cannot use are tool
// errors, not protocol errors.
func TestProcessesArguments(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "watch", serviceScript, serviceDescribe("watch"))
	e := f.start(t, nil)
	for _, args := range []map[string]any{
		{"action": "status"},
		{"action": "nope", "process": "p000000"},
		{"action": "status", "process": "p000000"},
		{"action": "list", "extra": true},
	} {
		wantFailure(t, e.call("processes", args))
	}
}

// TestConnectionCloseStopsProcesses: the session's processes stop when
// the client's connection ends.
func TestConnectionCloseStopsProcesses(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "watch", serviceScript, serviceDescribe("watch"))
	e := f.start(t, nil)
	wantOK(t, e.call("watch", nil))
	data, err := os.ReadFile(filepath.Join(f.Dir, "service.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("service %d is not running", pid)
	}
	e.close() // Serve returns only once the session is closed
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("service %d still runs after the connection closed", pid)
	}
}

func TestServiceThatNeverGetsReady(t *testing.T) {
	f := newFixture(t)
	d := serviceDescribe("dud")
	d.Runtime = &protocol.Runtime{Timeout: &protocol.Timeout{Start: secs(0.3)}}
	f.AddTool(t, "dud", `echo starting; echo oops >&2; sleep 10`, d)
	fl := wantFailure(t, f.start(t, nil).call("dud", nil))
	if !strings.Contains(fl.Error, "not ready") || !strings.Contains(fl.Output, "oops") {
		t.Errorf("failure = %+v, want the reason and the output", fl)
	}
}

func secs(s float64) *float64 { return &s }

// TestStreamTool: events arrive as progress; the result keeps the last
// StreamKeep events and counts the rest.
func TestStreamTool(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "count", `for i in 1 2 3 4 5; do echo "{\"i\": $i}"; done`,
		v2("count", &protocol.Process{Mode: protocol.ProcessStream, Output: &protocol.Output{Event: json.RawMessage(`{"type":"object"}`)}}))
	f.AddTool(t, "crash", `echo '{"i": 1}'; echo dying >&2; exit 4`, v2("crash", &protocol.Process{Mode: protocol.ProcessStream}))
	e := f.start(t, func(o *Options) { o.StreamKeep = 3 })

	p := &mcp.CallToolParams{Name: "count"}
	p.SetProgressToken(7)
	res := e.callWith(p)
	wantOK(t, res)
	var ev EventsResult
	decode(t, res, &ev)
	if ev.Count != 5 || ev.Elided != 2 || len(ev.Events) != 3 || !sameJSON(ev.Events[0].Event, `{"i": 3}`) {
		t.Errorf("stream result = %+v", ev)
	}
	// The client handles notifications concurrently with the result.
	var progress []string
	testenv.Eventually(t, 5*time.Second, "five progress notifications", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		progress = append([]string(nil), e.progress...)
		return len(progress) >= 5
	})
	if len(progress) != 5 || !sameJSON([]byte(progress[0]), `{"i": 1}`) || !sameJSON([]byte(progress[4]), `{"i": 5}`) {
		t.Errorf("progress = %q, want each event", progress)
	}

	fl := wantFailure(t, e.call("crash", nil))
	if fl.ExitCode != 4 || !strings.Contains(fl.StderrTail, "dying") || !strings.Contains(fl.Output, `"events":[{"event":{"i":1}}]`) {
		t.Errorf("failed stream = %+v", fl)
	}
}

// TestBackgroundCommands: run waits inline for a quick command; a slow
// one keeps running, is found by name and killed.
func TestBackgroundCommands(t *testing.T) {
	f := newFixture(t)
	f.Lock.Builtins = []string{mcpnames.BuiltinProcess}
	f.Lock.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	rehash(t, f, "sandbox = \"none\"\nbuiltin \"process\" { unconfined = true }\n")
	e := f.start(t, nil)

	var st supervisor.Status
	res := e.call("process_run", map[string]any{"command": "echo hi; echo $GREETING", "env": map[string]any{"GREETING": "hello"}})
	wantOK(t, res)
	decode(t, res, &st)
	if st.Status != supervisor.StateExited || st.Stdout == nil || st.Stdout.Text != "hi\nhello\n" {
		t.Errorf("quick command = %+v", st)
	}

	decode(t, e.call("process_run", map[string]any{"command": "sleep 30", "name": "nap", "wait_seconds": 0}), &st)
	if st.Status != supervisor.StateRunning || st.Name != "nap" {
		t.Fatalf("slow command = %+v", st)
	}
	decode(t, e.call("process_status", map[string]any{"process": "nap", "wait_seconds": 0.1}), &st)
	if st.Status != supervisor.StateRunning {
		t.Errorf("status = %+v", st)
	}
	decode(t, e.call("process_kill", map[string]any{"process": "nap"}), &st)
	if st.Status != supervisor.StateStopped {
		t.Errorf("kill = %+v", st)
	}
	wantFailure(t, e.call("process_run", map[string]any{"command": "true", "name": "Bad Name"}))
	wantFailure(t, e.call("process_status", map[string]any{}))
}

// rehash rewrites the toolbox file and its hash in the lock.
func rehash(t *testing.T, f *fixture, content string) {
	path := filepath.Join(f.Dir, "toolbox.hcl")
	locktest.WriteFile(t, path, content, 0o644)
	f.Lock.File = manifest.FileRef{Path: "toolbox.hcl", SHA256: locktest.SHA256File(t, path)}
}
