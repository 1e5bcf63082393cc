package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

func TestStartCompletesAtTheReadyLine(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "svc", `echo booting; sleep 0.2; echo "  ready now"; echo '{"n":1}'; exec sleep 30`,
		describe("svc", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`ready now$`)}, nil))
	s := f.supervisor(t)
	begin := time.Now()
	h, err := s.Start(ctxT(t), "sess", "svc", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(begin) < 200*time.Millisecond {
		t.Error("Start returned before the ready line")
	}
	if h.Status != StateRunning || h.Tool != "svc" || !looksLikeID(h.Process) || h.Since.IsZero() {
		t.Errorf("handle = %+v", h)
	}
	pg, err := s.Output("sess", h.Process, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pg.Text(), "booting\n  ready now\n") {
		t.Errorf("output = %q, want the startup lines kept", pg.Text())
	}
	if _, err := s.Output("sess", h.Process, pg.Head+1, 0); !errors.Is(err, ErrCursorAhead) {
		t.Errorf("cursor beyond the head: %v", err)
	}
	if _, err := s.Output("sess", h.Process, 0, 1); err != nil {
		t.Errorf("a one-byte page of ASCII: %v", err)
	}
}

// The JSON of a Status is the handle's keys plus the status's, flat, as
// --json and MCP structured content show it.
func TestStatusJSONShape(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "echo hi; exit 2", Name: "job"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"process", "tool", "status", "since", "runtime", "session", "kind", "name", "done", "exit_code", "reason", "pid", "started", "ended", "output", "stdout", "stderr"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, data)
		}
	}
	if m["status"] != "failed" || m["exit_code"] != float64(2) || m["tool"] != "process" {
		t.Errorf("values in %s", data)
	}
	if out := m["stdout"].(map[string]any); out["text"] != "hi\n" || out["written"] != float64(3) {
		t.Errorf("stdout = %v", out)
	}
	if errs := m["stderr"].(map[string]any); errs["text"] != "" || errs["written"] != float64(0) {
		t.Errorf("stderr = %v", errs)
	}
}

func TestStartReadyOnExit(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "setup", `echo done`, describe("setup", protocol.ProcessService, &protocol.Process{Ready: &protocol.Ready{Kind: "exit"}}, nil))
	f.AddTool(t, "badsetup", `echo broken >&2; exit 3`, describe("badsetup", protocol.ProcessService, &protocol.Process{Ready: &protocol.Ready{Kind: "exit"}}, nil))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "setup", nil, StartOptions{})
	if err != nil || h.Status != StateExited {
		t.Fatalf("Start = %+v, %v; want exited", h, err)
	}
	_, err = s.Start(ctxT(t), "sess", "badsetup", nil, StartOptions{})
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "exited with code 3") {
		t.Fatalf("Start of a failing exit-ready tool: %v", err)
	}
	st := mustStatus(t, s, "sess", se.Process)
	if st.Status != StateFailed || st.Stderr == nil || !strings.Contains(st.Stderr.Text, "broken") {
		t.Errorf("its record = %+v", st)
	}
}

func TestStartImmediateAndTwiceGivesTwoHandles(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "svc", `exec sleep 30`, describe("svc", protocol.ProcessService, &protocol.Process{Ready: &protocol.Ready{Kind: "immediate"}}, nil))
	f.Lock.Capabilities["sleeper"] = &manifest.Capability{Backends: []string{"svc"}, Active: "svc"}
	s := f.supervisor(t)
	a, err := s.Start(ctxT(t), "sess", "svc", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Start(ctxT(t), "sess", "sleeper", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Process == b.Process || a.Status != StateRunning || b.Status != StateRunning {
		t.Fatalf("handles %+v and %+v", a, b)
	}
	if st := mustStatus(t, s, "sess", b.Process); st.Capability != "sleeper" || st.Tool != "svc" {
		t.Errorf("capability start = %+v", st)
	}
	if _, err := s.Stop(ctxT(t), "sess", a.Process, false); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, s, "sess", b.Process); st.Status != StateRunning {
		t.Errorf("stopping one handle changed the other: %s", st.Status)
	}
	// Another session does not see them.
	if _, err := s.Status(ctxT(t), "other", b.Process, 0); !errors.Is(err, ErrUnknownProcess) {
		t.Errorf("status from another session: %v", err)
	}
}

func TestStartThatNeverGetsReadyIsKilled(t *testing.T) {
	f := newFixture(t)
	pidfile := filepath.Join(f.Dir, "grandchild.pid")
	f.AddTool(t, "stuck", `sleep 30 & echo $! > `+pidfile+`; echo booting; exec sleep 30`,
		describe("stuck", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)},
			&protocol.Runtime{Timeout: &protocol.Timeout{Start: secs(0.3)}}))
	s := f.supervisor(t)
	begin := time.Now()
	_, err := s.Start(ctxT(t), "sess", "stuck", nil, StartOptions{})
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "not ready within 300ms") || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Start error = %v", err)
	}
	if d := time.Since(begin); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("Start took %s, want about the start timeout", d)
	}
	var se *StartError
	errors.As(err, &se)
	st := mustStatus(t, s, "sess", se.Process)
	if st.Status != StateFailed || alive(st.PID) {
		t.Errorf("after the timeout: %+v (alive %v)", st.Handle, alive(st.PID))
	}
	if gc := readPidFile(t, pidfile); alive(gc) {
		t.Errorf("grandchild %d outlived the killed start", gc)
	}
}

func TestStartCanceledByContextKillsTheProcess(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "stuck", `exec sleep 30`, describe("stuck", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)}, nil))
	s := f.supervisor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Start(ctx, "sess", "stuck", nil, StartOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotReady) {
		t.Fatalf("error = %v", err)
	}
	list, _ := s.List("sess")
	if len(list) != 1 || list[0].Status != StateStopped || alive(list[0].PID) {
		t.Errorf("after the cancel: %+v", list)
	}
}

func TestStopSendsTheDeclaredCancelThenKills(t *testing.T) {
	f := newFixture(t)
	// Ignores SIGTERM (sleep inherits the ignored disposition).
	f.AddTool(t, "stubborn", `trap '' TERM; echo ready; while :; do sleep 0.05; done`,
		describe("stubborn", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)},
			&protocol.Runtime{Timeout: &protocol.Timeout{Stop: secs(0.4)}}))
	// Exits 0 on SIGINT.
	f.AddTool(t, "polite", `trap 'echo bye; exit 0' INT; echo ready; while :; do sleep 0.05; done`,
		describe("polite", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)},
			&protocol.Runtime{Cancel: &protocol.Cancel{Signal: "SIGINT"}}))
	s := f.supervisor(t)

	h, err := s.Start(ctxT(t), "sess", "stubborn", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	st, err := s.Stop(ctxT(t), "sess", h.Process, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d < 400*time.Millisecond {
		t.Errorf("stop took %s: SIGKILL came before the stop grace", d)
	}
	if st.Status != StateStopped || st.ExitCode == nil || *st.ExitCode != 128+9 || alive(st.PID) {
		t.Errorf("after stop: %+v exit %v", st.Handle, st.ExitCode)
	}

	h, err = s.Start(ctxT(t), "sess", "polite", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err = s.Stop(ctxT(t), "sess", h.Process, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != StateStopped || st.ExitCode == nil || *st.ExitCode != 0 || !strings.Contains(st.Stdout.Text, "bye") {
		t.Errorf("SIGINT cancel: %+v exit %v tail %q", st.Handle, st.ExitCode, st.Stdout.Text)
	}
}

func TestForcedStopKillsAtOnce(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "stubborn", `trap '' TERM; echo ready; exec sleep 30`,
		describe("stubborn", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)},
			&protocol.Runtime{Timeout: &protocol.Timeout{Stop: secs(20)}}))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "stubborn", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A graceful stop starts waiting out its 20 s grace...
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if st, err := s.Stop(ctx, "sess", h.Process, false); !errors.Is(err, context.DeadlineExceeded) || st.Status != StateStopping {
		t.Fatalf("graceful stop = %s, %v; want stopping and the context's error", st.Status, err)
	}
	// ...and force cuts it short.
	begin := time.Now()
	st, err := s.Stop(ctxT(t), "sess", h.Process, true)
	if err != nil || st.Status != StateStopped || time.Since(begin) > 3*time.Second {
		t.Errorf("forced stop = %s, %v after %s", st.Status, err, time.Since(begin))
	}
}

func TestStopOfAFinishedProcessReturnsItsFinalState(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "brief", `echo '{"x":1}'; exit 4`, describe("brief", protocol.ProcessStream, nil, nil))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "brief", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Wait(ctxT(t), "sess", h.Process)
	if err != nil || st.Status != StateFailed || *st.ExitCode != 4 {
		t.Fatalf("wait = %+v, %v", st, err)
	}
	for range 2 {
		again, err := s.Stop(ctxT(t), "sess", h.Process, true)
		if err != nil || again.Status != StateFailed || *again.ExitCode != 4 || !again.Since.Equal(st.Since) {
			t.Errorf("stop of a finished process = %+v, %v; want its final state unchanged", again.Handle, err)
		}
	}
}

func TestIdleTimeoutEndsTimedOut(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "quiet", `echo ready; echo tick; sleep 0.2; echo tick; exec sleep 30`,
		describe("quiet", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)},
			&protocol.Runtime{OnExit: "restart", Timeout: &protocol.Timeout{Idle: secs(0.5)}}))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "quiet", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	st, err := s.Wait(ctxT(t), "sess", h.Process)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != StateTimedOut || !strings.Contains(st.Reason, "timeout.idle") || st.Restarts != 0 {
		t.Errorf("status = %+v reason %q", st.Handle, st.Reason)
	}
	// The output at 0.2 s pushed the deadline: about 0.7 s after start.
	if d := time.Since(begin); d < 500*time.Millisecond {
		t.Errorf("timed out after %s, before the idle time counted from the last output", d)
	}
}

func TestRestartWithBackoffAndLimit(t *testing.T) {
	f := newFixture(t)
	starts := filepath.Join(f.Dir, "starts")
	f.AddTool(t, "crashy", `date +%s.%N >> `+starts+`; echo ready; exit 1`,
		describe("crashy", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)},
			&protocol.Runtime{OnExit: "restart"}))
	s := f.supervisor(t, func(c *Config) {
		c.Limits.RestartLimit = 3
		c.Timing.RestartBackoff = 100 * time.Millisecond
	})
	h, err := s.Start(ctxT(t), "sess", "crashy", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	awaitExitMail(t, s, "sess", h.Process) // not Wait: it would take the completion inline
	st := mustStatus(t, s, "sess", h.Process)
	if st.Status != StateFailed || st.Restarts != 3 || !strings.Contains(st.Reason, "restart limit of 3") {
		t.Errorf("final = %+v restarts %d reason %q", st.Handle, st.Restarts, st.Reason)
	}
	data, _ := os.ReadFile(starts)
	times := strings.Fields(string(data))
	if len(times) != 4 {
		t.Fatalf("%d runs, want 4 (1 + 3 restarts)", len(times))
	}
	// Backoff 100, 200, 400 ms: each gap at least its delay.
	var prev float64
	for i, s := range times {
		v := parseSeconds(t, s)
		if i > 0 {
			want := 0.1 * float64(int(1)<<(i-1))
			if v-prev < want*0.9 {
				t.Errorf("gap %d = %.3fs, want at least %.1fs", i, v-prev, want)
			}
		}
		prev = v
	}
	inbox, _ := s.Inbox("sess", 0, 0)
	var restarts, exits int
	for _, m := range inbox.Mails {
		switch m.Kind {
		case MailRestart:
			restarts++
		case MailExit:
			exits++
			if m.State != StateFailed {
				t.Errorf("exit mail state %s", m.State)
			}
		}
	}
	if restarts != 3 || exits != 1 {
		t.Errorf("mails: %d restarts, %d exits; want 3 and 1", restarts, exits)
	}
}

func parseSeconds(t testing.TB, s string) float64 {
	t.Helper()
	var sec, frac float64
	whole, part, _ := strings.Cut(s, ".")
	for _, c := range whole {
		sec = sec*10 + float64(c-'0')
	}
	scale := 0.1
	for _, c := range part {
		frac += float64(c-'0') * scale
		scale /= 10
	}
	return sec + frac
}

func TestStopDuringRestartBackoff(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "crashy", `exit 1`, describe("crashy", protocol.ProcessService, nil, &protocol.Runtime{OnExit: "restart"}))
	s := f.supervisor(t, func(c *Config) { c.Timing.RestartBackoff = 10 * time.Second })
	h, err := s.Start(ctxT(t), "sess", "crashy", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "restarting", func() bool { return mustStatus(t, s, "sess", h.Process).Status == StateRestarting })
	st, err := s.Stop(ctxT(t), "sess", h.Process, false)
	if err != nil || st.Status != StateStopped || st.Restarts != 1 {
		t.Errorf("stop while restarting = %+v, %v", st.Handle, err)
	}
}

func TestOnExitFailAndReport(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "failer", `exit 0`, describe("failer", protocol.ProcessService, nil, &protocol.Runtime{OnExit: "fail"}))
	f.AddTool(t, "reporter", `exit 0`, describe("reporter", protocol.ProcessService, nil, nil))
	s := f.supervisor(t)
	for name, want := range map[string]State{"failer": StateFailed, "reporter": StateExited} {
		h, err := s.Start(ctxT(t), "sess", name, nil, StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, _ := s.Wait(ctxT(t), "sess", h.Process)
		if st.Status != want {
			t.Errorf("%s: %s (%s), want %s", name, st.Status, st.Reason, want)
		}
	}
}

func TestStartRefusals(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "once", `echo hi`, describe("once", protocol.ProcessOneshot, nil, nil))
	tl := f.AddTool(t, "needsarg", `echo "$@"; exec sleep 30`, describe("needsarg", protocol.ProcessService, nil, nil))
	tl.Describe.Args = []protocol.Arg{{Name: "path", Description: "p", Type: "string", BackingType: "string", Arity: "single", Mode: "dashdashspace"}}
	f.AddTool(t, "changed", `exec sleep 30`, describe("changed", protocol.ProcessService, nil, nil))
	locktest.WriteFile(t, filepath.Join(f.Dir, "tools", "changed"), "#!/bin/sh\necho evil\n", 0o755)
	f.AddTool(t, "confined", `exec sleep 30`, describe("confined", protocol.ProcessService, nil, &protocol.Runtime{Sandbox: &protocol.Sandbox{Net: "none"}}))
	s := f.supervisor(t)
	cases := []struct {
		name string
		args map[string]any
		want func(error) bool
	}{
		{"once", nil, func(err error) bool { return errors.Is(err, ErrNotStartable) }},
		{"needsarg", nil, func(err error) bool { var ae *launcher.ArgError; return errors.As(err, &ae) }},
		{"changed", nil, func(err error) bool { var re *launcher.RefusedError; return errors.As(err, &re) }},
		{"confined", nil, func(err error) bool { var re *launcher.RefusedError; return errors.As(err, &re) }},
		{"nosuch", nil, func(err error) bool { return errors.Is(err, launcher.ErrUnknownName) }},
	}
	for _, c := range cases {
		if _, err := s.Start(ctxT(t), "sess", c.name, c.args, StartOptions{}); !c.want(err) {
			t.Errorf("Start(%s) error = %v", c.name, err)
		}
	}
	if list, _ := s.List("sess"); len(list) != 0 {
		t.Errorf("refused starts left records: %+v", list)
	}
	if _, err := s.Start(ctxT(t), "", "once", nil, StartOptions{}); !errors.Is(err, ErrBadSession) {
		t.Errorf("empty session: %v", err)
	}
	// Arguments are encoded: the dashdashspace arg reaches argv.
	h, err := s.Start(ctxT(t), "sess", "needsarg", map[string]any{"path": "/x"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "argv echoed", func() bool {
		pg, _ := s.Output("sess", h.Process, 0, 0)
		return pg.Text() == "run --path /x\n"
	})
}

// TestReadyLineTooLongIsNoMatch: a 2 MB line whose first bytes match
// ready.match is not the ready line (only its first MaxEventBytes were
// tested, and a service that was not ready was reported ready); the start
// times out saying why, and so does the status. The positive twin: the
// same long line followed by a real ready line starts the service, with
// the long line noted.
func TestReadyLineTooLongIsNoMatch(t *testing.T) {
	f := newFixture(t)
	long := `printf 'READY '; head -c 2000000 /dev/zero | tr '\000' 'x'; echo ' NOT'`
	ready := &protocol.Process{Ready: readyLineAt(`^READY( x*)?$`)}
	f.AddTool(t, "fooled", long+"; exec sleep 30", describe("fooled", protocol.ProcessService, ready, nil))
	f.AddTool(t, "honest", long+"; echo READY; exec sleep 30", describe("honest", protocol.ProcessService, ready, nil))
	s := f.supervisor(t, func(c *Config) { c.Timing.StartTimeout = 2 * time.Second })

	_, err := s.Start(ctxT(t), "sess", "fooled", nil, StartOptions{})
	var se *StartError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "not ready within 2s") || !strings.Contains(err.Error(), "a line too long to judge is never taken for the ready line") {
		t.Fatalf("Start(fooled) = %v, want not ready, saying why", err)
	}
	st, err := s.Status(ctxT(t), "sess", se.Process, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != StateFailed || len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "longer than 65536 bytes") {
		t.Errorf("status of fooled: %s, notes %q", st.Status, st.Notes)
	}

	h, err := s.Start(ctxT(t), "sess", "honest", nil, StartOptions{})
	if err != nil || h.Status != StateRunning {
		t.Fatalf("Start(honest) = %+v, %v", h, err)
	}
	if st, _ := s.Status(ctxT(t), "sess", h.Process, 0); len(st.Notes) != 1 {
		t.Errorf("status of honest: notes %q, want the long line noted", st.Notes)
	}
}

// A plugin tool (the default toolbox's walk stream) is refused with the
// command that runs it.
func TestStartablePluginNamesTheFix(t *testing.T) {
	err := startable("walk", &manifest.Tool{Kind: manifest.KindPlugin})
	if !errors.Is(err, ErrNotStartable) || !strings.Contains(err.Error(), "`toolbox run walk`") {
		t.Errorf("startable(plugin) = %v, want ErrNotStartable naming `toolbox run walk`", err)
	}
}

// readyThenDone is a context whose Done channel is closed only once the
// process's first start has been answered (readyCh holds the answer), so
// that Start's select finds both ready and picks either.
type readyThenDone struct {
	context.Context
	t    testing.TB
	s    *Supervisor
	done chan struct{}
}

func (c *readyThenDone) Done() <-chan struct{} {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.s.mu.Lock()
		var answered bool
		if sess := c.s.sessions["sess"]; sess != nil && len(sess.procs) > 0 {
			answered = len(sess.procs[len(sess.procs)-1].readyCh) == 1 // the newest start's
		}
		c.s.mu.Unlock()
		if answered {
			return c.done
		}
		if time.Now().After(deadline) {
			c.t.Error("the start was not answered within 10s")
			return c.done
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *readyThenDone) Err() error { return context.Canceled }

// A start canceled just as its process became ready stops the process
// with its declared cancel (here SIGINT, on which it says bye and exits
// 0), never with SIGKILL: Start's select picks either case at random, so
// each of many rounds must come out so.
func TestStartCanceledAtReadyStopsWithTheDeclaredCancel(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "polite", `trap 'echo bye; exit 0' INT; echo ready; while :; do sleep 0.05; done`,
		describe("polite", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)},
			&protocol.Runtime{Cancel: &protocol.Cancel{Signal: "SIGINT"}}))
	s := f.supervisor(t)
	canceled := 0
	for round := range 12 {
		done := make(chan struct{})
		close(done)
		ctx := &readyThenDone{Context: context.Background(), t: t, s: s, done: done}
		h, err := s.Start(ctx, "sess", "polite", nil, StartOptions{})
		id := h.Process
		if err != nil {
			var se *StartError
			if !errors.As(err, &se) || !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: error = %v", round, err)
			}
			id = se.Process
			canceled++
		} else if _, err := s.Stop(ctxT(t), "sess", id, false); err != nil {
			t.Fatal(err)
		}
		st := mustStatus(t, s, "sess", id)
		if st.ExitCode == nil || *st.ExitCode != 0 || !strings.Contains(st.Stdout.Text, "bye") {
			t.Fatalf("round %d (canceled %v): %+v exit %v tail %q: not stopped by its declared cancel", round, err != nil, st.Handle, st.ExitCode, st.Stdout.Text)
		}
	}
	t.Logf("%d of 12 rounds took the cancel", canceled)
}
