package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// fakeDaemon answers requests with canned results by op and records them.
type fakeDaemon struct {
	results map[string]any
	errs    map[string]error
	reqs    []wire.Request
}

func (f *fakeDaemon) Call(_ context.Context, req wire.Request, out any) error {
	f.reqs = append(f.reqs, req)
	if err := f.errs[req.Op]; err != nil {
		return err
	}
	raw, err := json.Marshal(f.results[req.Op])
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

func (f *fakeDaemon) last() wire.Request {
	if len(f.reqs) == 0 {
		return wire.Request{}
	}
	return f.reqs[len(f.reqs)-1]
}

// fake wires the fake daemon and a fixed environment into o.
func (f *fakeDaemon) wire(o *DaemonOptions, env map[string]string) {
	o.Dial = func() (Caller, error) { return f, nil }
	o.Getenv = func(k string) string { return env[k] }
}

// execute runs cmd under a root with the global flags, as the binary
// does, and returns stdout, stderr and the exit code.
func execute(t *testing.T, g *Globals, cmd *cobra.Command, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	g.IO = IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errb}
	root := &cobra.Command{Use: "toolbox", SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	root.PersistentFlags().StringVarP(&g.File, "file", "f", "", "")
	root.PersistentFlags().StringVar(&g.StateDir, "state-dir", "", "")
	root.SetOut(&out)
	root.SetErr(&errb)
	root.AddCommand(cmd)
	root.SetArgs(args)
	code := Execute(root, g.IO)
	return out.String(), errb.String(), code
}

var since = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestStartCommand(t *testing.T) {
	fd := &fakeDaemon{results: map[string]any{wire.OpStart: supervisor.Handle{Process: "p0a1b2c", Tool: "watch_log", Status: supervisor.StateRunning, Since: since}}}
	g := &Globals{}
	var got *StartOptions
	cmd := NewCmdStart(g, func(o *StartOptions) error {
		got = o
		fd.wire(&o.DaemonOptions, map[string]string{"TOOLBOX_SESSION": "from-env"})
		o.Environ = func() []string { return []string{"A=1"} }
		return startRun(context.Background(), o)
	})
	out, errOut, code := execute(t, g, cmd, "", "start", "watch_log", "-f", "tb/toolbox.hcl", "--args", `{"path":"app.log","n":2}`, "--backend", "c=t")
	if code != 0 || out != "p0a1b2c\n" || !strings.HasPrefix(errOut, "watch_log is running as process p0a1b2c (since ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	req := fd.last()
	wantLock, _ := filepath.Abs("tb/toolbox.lock.json")
	if req.Op != wire.OpStart || req.Session != "from-env" || req.Tool != "watch_log" || string(req.Args) != `{"path":"app.log","n":2}` ||
		req.Backends["c"] != "t" || strings.Join(req.CallerEnv, " ") != "A=1" || req.Lock != wantLock {
		t.Errorf("request %+v", req)
	}
	if got.Name != "watch_log" {
		t.Errorf("options %+v", got)
	}

	out, _, code = execute(t, g, NewCmdStart(g, func(o *StartOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return startRun(context.Background(), o)
	}), "", "start", "watch_log", "--json", "--session", "s9")
	if code != 0 || !strings.Contains(out, `"process": "p0a1b2c"`) || !strings.Contains(out, `"since": "2030-01-02T03:04:05Z"`) {
		t.Errorf("--json: exit %d, %q", code, out)
	}
	if r := fd.last(); r.Session != "s9" || r.Lock != "" || string(r.Args) != "{}" {
		t.Errorf("request %+v: want session s9, no lock (no -f), args {}", r)
	}
}

func TestStartUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"start"},
		{"start", "x", "--args", "[1]"},
		{"start", "x", "--args", "{}", "--args-file", "f"},
		{"start", "x", "--backend", "nope"},
	} {
		fd := &fakeDaemon{}
		g := &Globals{}
		cmd := NewCmdStart(g, func(o *StartOptions) error {
			fd.wire(&o.DaemonOptions, nil)
			return startRun(context.Background(), o)
		})
		if _, errOut, code := execute(t, g, cmd, "", args...); code != ExitUsage || len(fd.reqs) != 0 {
			t.Errorf("%q: exit %d (stderr %q), %d requests; want a usage error and none", args, code, errOut, len(fd.reqs))
		}
	}
}

func TestSendCommand(t *testing.T) {
	fd := &fakeDaemon{results: map[string]any{wire.OpSend: supervisor.SendResult{Process: "p0a1b2c", Status: supervisor.SendAnswered, Events: []launcher.Event{
		{Event: json.RawMessage(`{ "kind": "paused" }`)},
		{Invalid: true, Raw: "not json", Error: "invalid character"},
	}}}}
	g := &Globals{}
	cmd := NewCmdSend(g, func(o *SendOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return sendRun(context.Background(), o)
	})
	out, errOut, code := execute(t, g, cmd, ` {"action":"pause"} `+"\n", "send", "p0a1b2c", "--event", "-")
	if code != 0 || out != "{\"kind\":\"paused\"}\nnot json\n" || errOut != "toolbox: event 2 is invalid: invalid character\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if r := fd.last(); r.Process != "p0a1b2c" || string(r.Event) != `{"action":"pause"}` || r.Session != DefaultSession {
		t.Errorf("request %+v", r)
	}

	fd.results[wire.OpSend] = supervisor.SendResult{Process: "p0a1b2c", Status: supervisor.SendAccepted}
	out, errOut, code = execute(t, g, NewCmdSend(g, func(o *SendOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return sendRun(context.Background(), o)
	}), "", "send", "p0a1b2c", "--event", `{"action":"resume"}`)
	if code != 0 || out != "" || errOut != "accepted by p0a1b2c (it emitted no event within the answer window)\n" {
		t.Errorf("accepted: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	for _, args := range [][]string{{"send", "p"}, {"send", "p", "--event", "{nope"}} {
		n := len(fd.reqs)
		_, _, code := execute(t, g, NewCmdSend(g, func(o *SendOptions) error {
			fd.wire(&o.DaemonOptions, nil)
			return sendRun(context.Background(), o)
		}), "", args...)
		if code != ExitUsage || len(fd.reqs) != n {
			t.Errorf("%q: exit %d; want a usage error before any request", args, code)
		}
	}
}

// The daemon's errors: the message under plain output, the typed error
// object on stdout under --json; exit 1 either way. No daemon says how to
// start one.
func TestDaemonErrors(t *testing.T) {
	fd := &fakeDaemon{errs: map[string]error{
		wire.OpStatus: &wire.Error{Code: wire.CodeUnknownProcess, Message: "no such process \"p000000\""},
		wire.OpList:   &wire.NoDaemonError{Socket: "/s/serve.sock", Err: errors.New("no such file or directory")},
		wire.OpStart:  &wire.Error{Code: wire.CodeNotReady, Message: "starting \"w\": process p0a1b2c not ready within 1s", Process: "p0a1b2c"},
	}}
	g := &Globals{}
	status := func() *cobra.Command {
		return NewCmdProcessesStatus(g, func(o *ProcessStatusOptions) error {
			fd.wire(&o.DaemonOptions, nil)
			return processStatusRun(context.Background(), o)
		})
	}
	out, errOut, code := execute(t, g, status(), "", "status", "p000000")
	if code != ExitError || out != "" || errOut != "error: no such process \"p000000\"\n" {
		t.Errorf("plain: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = execute(t, g, status(), "", "status", "p000000", "--json")
	want := "{\n  \"error\": {\n    \"code\": \"unknown_process\",\n    \"message\": \"no such process \\\"p000000\\\"\"\n  }\n}\n"
	if code != ExitError || out != want || errOut != "" {
		t.Errorf("--json: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	_, errOut, code = execute(t, g, NewCmdProcessesList(g, func(o *ProcessesListOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return processesListRun(context.Background(), o)
	}), "", "list")
	if code != ExitError || !strings.Contains(errOut, "no toolbox daemon is listening on /s/serve.sock") || !strings.Contains(errOut, "toolbox serve") || !strings.Contains(errOut, "systemd-run --user") {
		t.Errorf("no daemon: exit %d, stderr %q", code, errOut)
	}

	_, errOut, code = execute(t, g, NewCmdStart(g, func(o *StartOptions) error {
		fd.wire(&o.DaemonOptions, nil)
		return startRun(context.Background(), o)
	}), "", "start", "w")
	if code != ExitError || !strings.Contains(errOut, "its output: toolbox processes output p0a1b2c") {
		t.Errorf("not ready: exit %d, stderr %q", code, errOut)
	}
}

func TestSessionID(t *testing.T) {
	for _, tc := range []struct {
		flag, env, want string
	}{{"f", "e", "f"}, {"", "e", "e"}, {"", "", DefaultSession}} {
		o := &DaemonOptions{Session: tc.flag, Getenv: func(string) string { return tc.env }}
		if got := o.SessionID(); got != tc.want {
			t.Errorf("--session %q, $TOOLBOX_SESSION %q: %q, want %q", tc.flag, tc.env, got, tc.want)
		}
	}
}
