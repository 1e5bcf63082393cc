package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// An inline wait above 30 s is capped at 30 s, as the seeds say, not
// refused; a negative one is still a usage error (see TestProcessesRequests).
func TestInlineWaitAbove30sIsCapped(t *testing.T) {
	done := supervisor.Status{Handle: supervisor.Handle{Process: "p0a1b2c", Tool: "process", Status: supervisor.StateExited}, Kind: supervisor.KindCommand, Done: true, ExitCode: intp(0)}
	fd := &fakeDaemon{results: map[string]any{wire.OpStatus: done, wire.OpRunCommand: done}}
	g := &Globals{}
	status := NewCmdProcessesStatus(g, func(o *ProcessStatusOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return processStatusRun(context.Background(), o)
	})
	_, errOut, code := execute(t, g, status, "", "status", "job", "--wait", "2m")
	if code != 0 || fd.last().WaitMS != 30000 || errOut != "toolbox: --wait 2m0s is capped at 30s (toolbox processes wait has no limit)\n" {
		t.Errorf("status --wait 2m: exit %d, request %+v, stderr %q", code, fd.last(), errOut)
	}
	run := NewCmdProcessesRun(g, func(o *ProcessRunOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		o.Environ = func() []string { return nil }
		return processRunRun(context.Background(), o)
	})
	if _, errOut, code := execute(t, g, run, "", "run", "make", "--wait", "45s"); code != 0 || fd.last().WaitMS != 30000 {
		t.Errorf("run --wait 45s: exit %d, request %+v, stderr %q", code, fd.last(), errOut)
	}
}

// status prints the last 4 KiB of stdout and of stderr, each labelled, and
// a stream's events (never passing an invalid one off as an event).
func TestStatusPlainLabelsTheStreams(t *testing.T) {
	st := supervisor.Status{
		Handle: supervisor.Handle{Process: "p0a1b2c", Tool: "process", Status: supervisor.StateExited, Since: since,
			Runtime: &supervisor.Runtime{Mechanism: "none", User: "dev", UID: 1000, GID: 1000, Rundir: "/work"}},
		Kind: supervisor.KindCommand, Done: true, ExitCode: intp(0), Started: since,
		Output: supervisor.OutputRange{Head: 5020},
		Stdout: &supervisor.StreamTail{Text: "result\n", Written: 7},
		Stderr: &supervisor.StreamTail{Text: "noise\n", Written: 5013, Truncated: true},
	}
	fd := &fakeDaemon{results: map[string]any{wire.OpStatus: st}}
	g := &Globals{}
	cmd := NewCmdProcessesStatus(g, func(o *ProcessStatusOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return processStatusRun(context.Background(), o)
	})
	out, _, code := execute(t, g, cmd, "", "status", "p0a1b2c")
	at := clock(since)
	want := "process:   p0a1b2c\n" +
		"kind:      command\n" +
		"tool:      process\n" +
		"status:    exited since " + at + "\n" +
		"runtime:   user dev (1000:1000), sandbox none, in /work\n" +
		"exit code: 0\n" +
		"started:   " + at + "\n" +
		"output:    bytes 0..5020 (toolbox processes output p0a1b2c --cursor 0)\n" +
		"--- stdout (7 bytes) ---\n" +
		"result\n" +
		"--- stderr (the last 6 of 5013 bytes) ---\n" +
		"noise\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}

	stream := supervisor.Status{
		Handle: supervisor.Handle{Process: "p0d4e5f", Tool: "tests", Status: supervisor.StateRunning, Since: since},
		Kind:   supervisor.KindStream, Started: since,
		Events: []launcher.Event{{Event: json.RawMessage(`{"test": "t1"}`)}, {Invalid: true, Raw: "not json", Error: "event is not JSON"}}, EventCount: 9,
		Stderr: &supervisor.StreamTail{},
	}
	fd.results[wire.OpStatus] = stream
	out, _, _ = execute(t, g, cmd, "", "status", "p0d4e5f")
	wantTail := "--- events (the last 2 of 9) ---\n" +
		"{\"test\":\"t1\"}\n" +
		"[invalid: event is not JSON] not json\n"
	if len(out) < len(wantTail) || out[len(out)-len(wantTail):] != wantTail {
		t.Errorf("stream status:\n%s\nwant it to end with:\n%s", out, wantTail)
	}
}

// The text inbox marks invalid events: an invalid line is shown with its
// reason, never as if it were an event.
func TestInboxPlainMarksInvalidEvents(t *testing.T) {
	fd := &fakeDaemon{results: map[string]any{wire.OpInbox: supervisor.InboxPage{Next: 3, Mails: []supervisor.Mail{
		{Seq: 3, Time: since, Process: "p0a1b2c", Tool: "watch_log", Kind: supervisor.MailEvents, Events: []launcher.Event{
			{Event: json.RawMessage(`{"line":"ok"}`)},
			{Invalid: true, Raw: `{"line":"broken"`, Error: "event is not JSON"},
		}},
	}}}}
	g := &Globals{}
	cmd := NewCmdInbox(g, func(o *InboxOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return inboxRun(context.Background(), o)
	})
	out, _, code := execute(t, g, cmd, "", "inbox")
	want := "#3 " + clock(since) + " p0a1b2c watch_log events: 2 events\n" +
		"  {\"line\":\"ok\"}\n" +
		"  [invalid: event is not JSON] {\"line\":\"broken\"\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
}
