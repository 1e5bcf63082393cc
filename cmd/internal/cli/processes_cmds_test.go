package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

func intp(n int) *int { return &n }

// Each subcommand's flags land in its request.
func TestProcessesRequests(t *testing.T) {
	done := supervisor.Status{Handle: supervisor.Handle{Process: "p0a1b2c", Tool: "process", Status: supervisor.StateExited, Since: since}, Kind: supervisor.KindCommand, Done: true, ExitCode: intp(0)}
	fd := &fakeDaemon{results: map[string]any{
		wire.OpStatus: done, wire.OpStop: done, wire.OpWait: done,
		wire.OpOutput: supervisor.Page{}, wire.OpTail: supervisor.Page{},
	}}
	g := &Globals{}
	processes := func() *cobra.Command {
		ctx := context.Background()
		parent := &cobra.Command{Use: "processes"}
		parent.AddCommand(
			NewCmdProcessesStatus(g, func(o *ProcessStatusOptions) error {
				fd.wire(&o.DaemonOptions, nil)
				return processStatusRun(ctx, o)
			}),
			NewCmdProcessesOutput(g, func(o *ProcessOutputOptions) error {
				fd.wire(&o.DaemonOptions, nil)
				return processOutputRun(ctx, o)
			}),
			NewCmdProcessesTail(g, func(o *ProcessTailOptions) error {
				fd.wire(&o.DaemonOptions, nil)
				return processTailRun(ctx, o)
			}),
			NewCmdProcessesStop(g, func(o *ProcessStopOptions) error {
				fd.wire(&o.DaemonOptions, nil)
				return processStopRun(ctx, o)
			}),
			NewCmdProcessesWait(g, func(o *ProcessWaitOptions) error {
				fd.wire(&o.DaemonOptions, nil)
				return processWaitRun(ctx, o)
			}),
		)
		return parent
	}
	for _, tc := range []struct {
		args []string
		want wire.Request
	}{
		{[]string{"processes", "status", "job", "--wait", "5s", "--session", "s"},
			wire.Request{Op: wire.OpStatus, Session: "s", Process: "job", WaitMS: 5000}},
		{[]string{"processes", "output", "job", "--cursor", "10", "--max", "20"},
			wire.Request{Op: wire.OpOutput, Session: "default", Process: "job", Cursor: 10, Max: 20}},
		{[]string{"processes", "tail", "job", "--bytes", "5"},
			wire.Request{Op: wire.OpTail, Session: "default", Process: "job", Bytes: 5}},
		{[]string{"processes", "stop", "job", "--force"},
			wire.Request{Op: wire.OpStop, Session: "default", Process: "job", Force: true}},
		{[]string{"processes", "wait", "job", "--timeout", "1m"},
			wire.Request{Op: wire.OpWait, Session: "default", Process: "job", WaitMS: 60000}},
	} {
		if _, errOut, code := execute(t, g, processes(), "", tc.args...); code != 0 {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errOut)
			continue
		}
		if got := fd.last(); !sameRequest(got, tc.want) {
			t.Errorf("%q: request %+v, want %+v", tc.args, got, tc.want)
		}
	}
	for _, args := range [][]string{
		{"processes", "status", "job", "--wait", "-1s"},
		{"processes", "output", "job", "--cursor", "-1"},
		{"processes", "tail", "job", "--bytes", "-1"},
		{"processes", "wait", "job", "--timeout", "-1s"},
		{"processes", "stop"},
	} {
		n := len(fd.reqs)
		if _, _, code := execute(t, g, processes(), "", args...); code != ExitUsage || len(fd.reqs) != n {
			t.Errorf("%q: exit %d; want a usage error before any request", args, code)
		}
	}
}

func sameRequest(a, b wire.Request) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestProcessesRun(t *testing.T) {
	fd := &fakeDaemon{results: map[string]any{wire.OpRunCommand: supervisor.Status{
		Handle: supervisor.Handle{Process: "p0a1b2c", Tool: "process", Status: supervisor.StateRunning, Since: since},
		Kind:   supervisor.KindCommand, Name: "build", Command: "make",
		Output: supervisor.OutputRange{Earliest: 0, Head: 5020},
		Stdout: &supervisor.StreamTail{Text: "compiling\n", Written: 5000, Truncated: true},
		Stderr: &supervisor.StreamTail{Text: "warning: x\n", Written: 11},
	}}}
	g := &Globals{}
	var got *ProcessRunOptions
	cmd := NewCmdProcessesRun(g, func(o *ProcessRunOptions) error {
		got = o
		fd.wire(&o.DaemonOptions, nil)
		o.Environ = func() []string { return []string{"PATH=/bin"} }
		return processRunRun(context.Background(), o)
	})
	out, errOut, code := execute(t, g, cmd, "", "run", "make", "--name", "build", "--label", "the build", "--cwd", "sub",
		"--env", "A=1", "--env", "B=x=y", "--timeout", "10m", "--wait", "0")
	if code != 0 || out != "compiling\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	wantErr := "warning: x\n" +
		"toolbox: only the last 4096 bytes of each stream are shown: toolbox processes output p0a1b2c --cursor 0\n" +
		"p0a1b2c (build) process \"make\": running\n" +
		"toolbox: follow it with: toolbox processes status p0a1b2c --wait 30s (or output, wait, stop)\n"
	if errOut != wantErr {
		t.Errorf("stderr %q, want %q", errOut, wantErr)
	}
	want := wire.Request{Op: wire.OpRunCommand, Session: "default", CallerEnv: []string{"PATH=/bin"}, WaitMS: -1,
		Command: &wire.Command{Cmd: "make", Name: "build", Label: "the build", Cwd: "sub", Env: map[string]string{"A": "1", "B": "x=y"}, TimeoutMS: 600000}}
	if r := fd.last(); !sameRequest(r, want) {
		t.Errorf("request %+v, want %+v", r, want)
	}
	if got.Wait != 0 || got.Timeout != 10*time.Minute {
		t.Errorf("options %+v", got)
	}

	for _, args := range [][]string{
		{"run", "x", "--wait", "-1s"},
		{"run", "x", "--env", "NOEQUALS"},
		{"run", "x", "--timeout", "-1s"},
		{"run"},
	} {
		n := len(fd.reqs)
		cmd := NewCmdProcessesRun(g, func(o *ProcessRunOptions) error {
			fd.wire(&o.DaemonOptions, nil)
			return processRunRun(context.Background(), o)
		})
		if _, _, code := execute(t, g, cmd, "", args...); code != ExitUsage || len(fd.reqs) != n {
			t.Errorf("%q: exit %d; want a usage error before any request", args, code)
		}
	}
}

func TestProcessesListPlain(t *testing.T) {
	fd := &fakeDaemon{results: map[string]any{wire.OpList: []supervisor.Status{
		{Handle: supervisor.Handle{Process: "p0a1b2c", Tool: "watch_log", Status: supervisor.StateRunning}, Kind: supervisor.KindService, Started: since.Add(-90 * time.Second)},
		{Handle: supervisor.Handle{Process: "p0d4e5f", Tool: "process", Status: supervisor.StateFailed}, Kind: supervisor.KindCommand, Name: "build", Command: "make all\nmake install", ExitCode: intp(2), Started: since.Add(-3 * time.Second)},
	}}}
	g := &Globals{}
	cmd := NewCmdProcessesList(g, func(o *ProcessesListOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		o.Now = func() time.Time { return since }
		return processesListRun(context.Background(), o)
	})
	out, errOut, code := execute(t, g, cmd, "", "list")
	want := "PROCESS  KIND     TOOL       NAME   STATUS   EXIT  STARTED    LABEL\n" +
		"p0a1b2c  service  watch_log  -      running  -     1m30s ago  -\n" +
		"p0d4e5f  command  process    build  failed   2     3s ago     make all...\n"
	if code != 0 || errOut != "" || out != want {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errOut, out, want)
	}
}

func TestProcessesOutputPlain(t *testing.T) {
	fd := &fakeDaemon{results: map[string]any{wire.OpOutput: supervisor.Page{
		Cursor: 100, Next: 112, Earliest: 100, Head: 200, Resumed: true, Note: "cursor 5 was before the ring; resumed at 100",
		Chunks: []supervisor.Chunk{{Stream: supervisor.Stdout, Cursor: 100, Text: "out\n"}, {Stream: supervisor.Stderr, Cursor: 104, Text: "err line"}},
	}}}
	g := &Globals{}
	cmd := NewCmdProcessesOutput(g, func(o *ProcessOutputOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return processOutputRun(context.Background(), o)
	})
	out, errOut, code := execute(t, g, cmd, "", "output", "p0a1b2c", "--cursor", "5")
	wantErr := "toolbox: cursor 5 was before the ring; resumed at 100\ntoolbox: bytes 100..112 of 200; more: --cursor 112\n"
	if code != 0 || out != "out\nerr line" || errOut != wantErr {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestInboxPlain(t *testing.T) {
	fd := &fakeDaemon{results: map[string]any{wire.OpInbox: supervisor.InboxPage{Next: 4, Mails: []supervisor.Mail{
		{Seq: 3, Time: since, Process: "p0a1b2c", Tool: "watch_log", Kind: supervisor.MailEvents, Events: []launcher.Event{{Event: json.RawMessage(`{"kind":"match","n":1}`)}}, Elided: 2},
		{Seq: 4, Time: since, Process: "p0a1b2c", Tool: "watch_log", Kind: supervisor.MailExit, State: supervisor.StateStopped, ExitCode: intp(143), Reason: "stopped by request"},
	}}}}
	g := &Globals{}
	cmd := NewCmdInbox(g, func(o *InboxOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return inboxRun(context.Background(), o)
	})
	out, errOut, code := execute(t, g, cmd, "", "inbox", "--cursor", "2")
	at := clock(since)
	want := "#3 " + at + " p0a1b2c watch_log events: 1 event (2 more not kept)\n" +
		"  {\"kind\":\"match\",\"n\":1}\n" +
		"#4 " + at + " p0a1b2c watch_log exit: stopped (code 143): stopped by request\n"
	if code != 0 || out != want || errOut != "toolbox: next --cursor 4\n" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errOut, out, want)
	}
	if r := fd.last(); r.Cursor != 2 {
		t.Errorf("request %+v", r)
	}
}

// wait --timeout that passes with the process still running prints its
// state and fails.
func TestProcessesWaitTimeout(t *testing.T) {
	fd := &fakeDaemon{results: map[string]any{wire.OpWait: supervisor.Status{
		Handle: supervisor.Handle{Process: "p0a1b2c", Tool: "watch_log", Status: supervisor.StateRunning}, Kind: supervisor.KindService,
	}}}
	g := &Globals{}
	cmd := NewCmdProcessesWait(g, func(o *ProcessWaitOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return processWaitRun(context.Background(), o)
	})
	out, errOut, code := execute(t, g, cmd, "", "wait", "p0a1b2c", "--timeout", "2s")
	if code != ExitError || out != "p0a1b2c watch_log: running\n" || !strings.Contains(errOut, "p0a1b2c is still running after 2s") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
