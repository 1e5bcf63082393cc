package supervisor

// The seeds' process contracts, exactly (issue 11, points 14 to 20): each
// test measures a bound or an order, never a sleep that happens to pass.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/protocol"
)

// exitMails counts the session's completion mails of process.
func exitMails(t testing.TB, s *Supervisor, session, process string) int {
	t.Helper()
	pg, err := s.Inbox(session, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range pg.Mails {
		if m.Kind == MailExit && m.Process == process {
			n++
		}
	}
	return n
}

// A completion delivered inline (RunCommand's wait, Status with a wait,
// Wait) is not mailed as well; one nobody delivered is mailed exactly once.
// The mail of a completion is added before the process's done channel is
// closed, so when a call has returned a final state, a mail that was
// going to be sent is in the inbox already: the checks are exact, not
// timed.
func TestCompletionSurfacesOnce(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	ctx := ctxT(t)

	// RunCommand's inline wait.
	st, err := s.RunCommand(ctx, "sess", Command{Cmd: "echo quick"})
	if err != nil || !st.Done {
		t.Fatalf("inline run = %+v, %v", st, err)
	}
	if n := exitMails(t, s, "sess", st.Process); n != 0 {
		t.Errorf("RunCommand delivered the completion inline and %d mails followed", n)
	}

	// Status with a wait, and Wait.
	for _, how := range []string{"status", "wait"} {
		wait, open := gate(t)
		st, err := s.RunCommand(ctx, "sess", Command{Cmd: wait + "echo later", Wait: -1})
		if err != nil || st.Done {
			t.Fatalf("%s: start = %+v, %v", how, st.Handle, err)
		}
		time.AfterFunc(50*time.Millisecond, open) // while the call waits
		if how == "status" {
			st, err = s.Status(ctx, "sess", st.Process, 10*time.Second)
		} else {
			st, err = s.Wait(ctx, "sess", st.Process)
		}
		if err != nil || !st.Done || st.Stdout.Text != "later\n" {
			t.Fatalf("%s = %+v, %v", how, st, err)
		}
		if n := exitMails(t, s, "sess", st.Process); n != 0 {
			t.Errorf("%s delivered the completion inline and %d mails followed", how, n)
		}
	}

	// Positive twin: an inline wait that ends first leaves the completion
	// to the mail, once.
	wait, open := gate(t)
	st, err = s.RunCommand(ctx, "sess", Command{Cmd: wait + "true", Wait: 20 * time.Millisecond})
	if err != nil || st.Done {
		t.Fatalf("short wait = %+v, %v", st.Handle, err)
	}
	open()
	awaitExitMail(t, s, "sess", st.Process)
	if n := exitMails(t, s, "sess", st.Process); n != 1 {
		t.Errorf("%d completion mails after the inline wait gave up, want 1", n)
	}
	// A status that finds the process finished already took nothing
	// inline: the mail stays, and no second one comes.
	if st, _ = s.Status(ctx, "sess", st.Process, time.Second); !st.Done || exitMails(t, s, "sess", st.Process) != 1 {
		t.Errorf("status of a finished process changed its mails: %+v", st.Handle)
	}

	// Stop is a request, not an inline wait (the bash-daemon seed's kill:
	// the completion "surfaces like any completion").
	st, _ = s.RunCommand(ctx, "sess", Command{Cmd: "sleep 30", Wait: -1})
	if _, err := s.Stop(ctx, "sess", st.Process, true); err != nil {
		t.Fatal(err)
	}
	if n := exitMails(t, s, "sess", st.Process); n != 1 {
		t.Errorf("%d completion mails after a stop, want 1", n)
	}
}

// A waiter whose client went away (ctx canceled) delivered nothing: the
// completion it held back is mailed when it gives up.
func TestCompletionHeldForAWaiterThatLeftIsMailed(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	wait, open := gate(t)
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: wait + "true", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.lookup("sess", st.Process)
	if err != nil {
		t.Fatal(err)
	}
	if !p.beginInline() {
		t.Fatal("the command finished before the waiter registered")
	}
	open()
	<-p.done
	if n := exitMails(t, s, "sess", st.Process); n != 0 {
		t.Fatalf("%d completion mails while a waiter holds it", n)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, final := p.endInline(gone); !final {
		t.Fatal("not final after done")
	}
	if n := exitMails(t, s, "sess", st.Process); n != 1 {
		t.Errorf("%d completion mails after the waiter left, want 1", n)
	}
}

// A background command's graceful stop is the bash-daemon seed's kill:
// SIGINT to its process group (its timeout too), then SIGKILL after the
// grace. Services keep their declared cancel (TestStopSendsTheDeclaredCancelThenKills).
func TestCommandStopIsSIGINTThenSIGKILL(t *testing.T) {
	f := newFixture(t)
	const grace = 400 * time.Millisecond
	s := f.supervisor(t, func(c *Config) { c.Timing.StopGrace = grace })
	ctx := ctxT(t)
	polite := `trap 'echo got INT; exit 7' INT; trap 'echo got TERM; exit 8' TERM; echo ready; while :; do sleep 0.05; done`
	awaitReady := func(id string) {
		testenv.Eventually(t, 5*time.Second, "ready", func() bool {
			pg, err := s.Output("sess", id, 0, 0)
			return err == nil && strings.Contains(pg.Text(), "ready")
		})
	}

	st, err := s.RunCommand(ctx, "sess", Command{Cmd: polite, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	awaitReady(st.Process)
	st, err = s.Stop(ctx, "sess", st.Process, false)
	if err != nil || st.Status != StateStopped || st.ExitCode == nil || *st.ExitCode != 7 || st.Stdout.Text != "ready\ngot INT\n" {
		t.Errorf("stop = %+v exit %v stdout %+v, %v; want SIGINT (exit 7)", st.Handle, st.ExitCode, st.Stdout, err)
	}

	// Its timeout stops it the same way: exit 7 from the trap, or 130 when
	// SIGINT came before the shell set its traps (never TERM's 8 or 143).
	st, err = s.RunCommand(ctx, "sess", Command{Cmd: polite, Timeout: 300 * time.Millisecond, Wait: 10 * time.Second})
	if err != nil || st.Status != StateTimedOut || st.ExitCode == nil || *st.ExitCode != 7 && *st.ExitCode != 128+int(syscall.SIGINT) {
		t.Errorf("timeout = %+v exit %v stdout %+v, %v; want SIGINT (exit 7 or 130)", st.Handle, st.ExitCode, st.Stdout, err)
	}

	// One that ignores SIGINT is killed after the grace, not before.
	st, err = s.RunCommand(ctx, "sess", Command{Cmd: `trap '' INT; echo ready; while :; do sleep 0.05; done`, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	awaitReady(st.Process)
	begin := time.Now()
	st, err = s.Stop(ctx, "sess", st.Process, false)
	took := time.Since(begin)
	if err != nil || st.ExitCode == nil || *st.ExitCode != 128+int(syscall.SIGKILL) {
		t.Errorf("stop of a command ignoring SIGINT = %+v exit %v, %v", st.Handle, st.ExitCode, err)
	}
	if took < grace || took > grace+5*time.Second {
		t.Errorf("SIGKILL came %s after the stop, want after the %s grace", took, grace)
	}
}

// Status shows the last TailBytes of stdout and of stderr, each labelled,
// so a chatty stderr cannot hide stdout.
func TestStatusShowsBothStreamsApart(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	cmd := `echo result; i=0; while [ $i -lt 300 ]; do echo "warning $i: something noisy happened" >&2; i=$((i+1)); done`
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: cmd})
	if err != nil || !st.Done {
		t.Fatalf("run = %+v, %v", st, err)
	}
	if st.Stdout == nil || st.Stdout.Text != "result\n" || st.Stdout.Written != 7 || st.Stdout.Truncated {
		t.Errorf("stdout = %+v, want all of it", st.Stdout)
	}
	e := st.Stderr
	if e == nil || len(e.Text) > TailBytes || len(e.Text) < TailBytes-64 || !e.Truncated || e.Written <= TailBytes ||
		!strings.HasSuffix(e.Text, "warning 299: something noisy happened\n") {
		t.Errorf("stderr = %d bytes of %d, truncated %v", len(e.Text), e.Written, e.Truncated)
	}
	data, _ := json.Marshal(st)
	if !strings.Contains(string(data), `"stdout":{"text":"result\n","written":7}`) || !strings.Contains(string(data), `"stderr":{"text":"`) {
		t.Errorf("JSON does not label the streams: %.300s", data)
	}
}

// An "events" n digest mails a partial group RoundMax after its first
// event: a single rare event reaches the session while the service runs.
func TestEventsDigestFlushesAPartialGroup(t *testing.T) {
	f := newFixture(t)
	wait, open := gate(t)
	f.AddTool(t, "rare", `echo ready; `+wait+`echo '{"n":1}'; exec sleep 30`, chatty(&protocol.Digest{Per: "events", N: 5}, ""))
	const most = 300 * time.Millisecond
	s := f.supervisor(t, func(c *Config) { c.Timing.RoundMax = most })
	h, err := s.Start(ctxT(t), "sess", "rare", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now() // before the event is written
	open()
	testenv.Eventually(t, most+5*time.Second, "the partial digest", func() bool {
		sizes, _ := eventMails(t, s, "sess")
		return len(sizes) == 1
	})
	if took := time.Since(begin); took < most*9/10 {
		t.Errorf("the partial group was mailed after %s, before RoundMax (%s)", took, most)
	}
	_, mails := eventMails(t, s, "sess")
	if len(mails[0].Events) != 1 || string(mails[0].Events[0].Event) != `{"n":1}` {
		t.Errorf("digest = %+v", mails[0])
	}
	if st := mustStatus(t, s, "sess", h.Process); st.Status != StateRunning {
		t.Errorf("the service is %s, want still running", st.Status)
	}
}

// A stream started with Start is seen through its events: status shows
// the newest events (not raw stdout) and its completion mail the last ones.
func TestStreamStartedInTheDaemonShowsEvents(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "tests", `for i in 1 2 3 4 5; do echo "{\"test\":\"t$i\"}"; done; echo 'not json'; echo oops >&2; exit 1`,
		describe("tests", protocol.ProcessStream, &protocol.Process{Output: &protocol.Output{Event: json.RawMessage(
			`{"type":"object","required":["test"]}`)}}, nil))
	s := f.supervisor(t, func(c *Config) { c.Limits.MailEvents = 3 })
	h, err := s.Start(ctxT(t), "sess", "tests", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := awaitExitMail(t, s, "sess", h.Process)
	if len(m.Events) != 3 || m.Elided != 3 || string(m.Events[0].Event) != `{"test":"t4"}` || !m.Events[2].Invalid || m.Events[2].Raw != "not json" {
		t.Errorf("completion mail = %+v, want the last 3 events and 3 elided", m)
	}
	st := mustStatus(t, s, "sess", h.Process)
	if st.Stdout != nil || st.EventCount != 6 || len(st.Events) != 3 || !st.Events[2].Invalid {
		t.Errorf("status = stdout %+v, %d events of %d: %+v", st.Stdout, len(st.Events), st.EventCount, st.Events)
	}
	if st.Stderr == nil || st.Stderr.Text != "oops\n" {
		t.Errorf("stderr = %+v", st.Stderr)
	}
}

// Handles show the resolved runtime: user, envdir, mechanism, rundir.
func TestHandlesShowTheResolvedRuntime(t *testing.T) {
	f := newFixture(t)
	lt := f.AddTool(t, "svc", `echo ready; exec sleep 30`,
		describe("svc", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)}, nil))
	lt.Runtime.Rundir = "work"
	lt.Runtime.Envdir = "env/svc"
	if err := os.MkdirAll(filepath.Join(f.Dir, "env", "svc"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "svc", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt := h.Runtime
	self := selfIdentity()
	if rt == nil || rt.Mechanism != "none" || rt.User != self.name || rt.UID != uint32(os.Getuid()) ||
		rt.Envdir != filepath.Join(f.Dir, "env", "svc") || rt.Rundir != filepath.Join(f.Dir, "work") {
		t.Errorf("runtime = %+v", rt)
	}
	if st := mustStatus(t, s, "sess", h.Process); st.Runtime == nil || *st.Runtime != *rt {
		t.Errorf("status runtime = %+v, want the handle's", st.Runtime)
	}
	dir := t.TempDir()
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true", Cwd: dir})
	if err != nil || st.Runtime == nil || st.Runtime.Mechanism != "none" || st.Runtime.Rundir != dir || st.Runtime.User != self.name {
		t.Errorf("command runtime = %+v, %v", st.Runtime, err)
	}
}

// slowValidator makes the stdout copier lag behind the service, as a
// costly output schema does under load.
type slowValidator struct{ d time.Duration }

func (v slowValidator) Validate(line []byte) (any, error) {
	time.Sleep(v.d)
	if !json.Valid(line) {
		return nil, errors.New("not JSON")
	}
	return nil, nil
}

// A send's answer holds only the events produced after the send, even
// when the supervisor is still framing a backlog the service wrote before.
func TestSendAnswersOnlyWithEventsAfterTheSend(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(t.TempDir(), "burst-written")
	f.AddTool(t, "busy", `echo ready
i=0; while [ $i -lt 150 ]; do echo "{\"n\":$i}"; i=$((i+1)); done
touch `+marker+`
read -r line; echo '{"pong":true}'`,
		describe("busy", protocol.ProcessService, &protocol.Process{
			Ready:  readyLineAt(`^ready$`),
			Input:  &protocol.Input{Framing: "jsonl"},
			Output: &protocol.Output{Framing: "jsonl", Event: json.RawMessage(`{"type":"object"}`)},
		}, nil))
	s := f.supervisor(t, func(c *Config) {
		c.CompileSchema = func(json.RawMessage) (EventValidator, error) { return slowValidator{5 * time.Millisecond}, nil }
		// Windows far longer than the backlog: the answer ends when the
		// service exits after its pong (its output all delivered).
		c.Timing.SendQuiet = 30 * time.Second
		c.Timing.SendMax = 30 * time.Second
	})
	h, err := s.Start(ctxT(t), "sess", "busy", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "the burst written", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	res, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{"op":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != SendAnswered || len(res.Events) != 1 || string(res.Events[0].Event) != `{"pong":true}` || res.Elided != 0 {
		n := len(res.Events)
		t.Errorf("answer = %s with %d events (first %s) and %d elided; want only the pong", res.Status, n, first(res.Events), res.Elided)
	}
	// The backlog is not lost: it is mailed.
	testenv.Eventually(t, 10*time.Second, "the backlog mailed", func() bool {
		sizes, _ := eventMails(t, s, "sess")
		total := 0
		for _, n := range sizes {
			total += n
		}
		return total >= 151
	})
}

func first(events []launcher.Event) string {
	if len(events) == 0 {
		return "none"
	}
	return string(events[0].Event) + events[0].Raw
}

// The host-wide limit holds across supervisors that share a slots
// directory (two toolbox mcp and a serve of one state dir), and the slots
// of a supervisor killed with SIGKILL are free at once.
func TestHostLimitIsSharedAcrossSupervisors(t *testing.T) {
	f := newFixture(t)
	slots := filepath.Join(t.TempDir(), "slots")
	mk := func() *Supervisor {
		return f.supervisor(t, func(c *Config) {
			c.SlotsDir = slots
			c.Limits.LivePerHost = 3
		})
	}
	a, b := mk(), mk()
	run := func(s *Supervisor, session string) (Status, error) {
		return s.RunCommand(ctxT(t), session, Command{Cmd: "sleep 30", Wait: -1})
	}
	first, err := run(a, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(a, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(b, "b"); err != nil {
		t.Fatal(err)
	}
	var le *LimitError
	if _, err := run(b, "b"); !errors.As(err, &le) || le.Limit != "live processes per host" || le.Max != 3 {
		t.Fatalf("a fourth process across two supervisors: %v", err)
	}
	if _, err := a.Stop(ctxT(t), "a", first.Process, true); err != nil {
		t.Fatal(err)
	}
	if _, err := run(b, "b"); err != nil {
		t.Errorf("after a stop in the other supervisor: %v", err)
	}
	// Different slots directories count apart.
	c := f.supervisor(t, func(c *Config) { c.SlotsDir = filepath.Join(t.TempDir(), "other"); c.Limits.LivePerHost = 3 })
	if _, err := run(c, "c"); err != nil {
		t.Errorf("another slots directory: %v", err)
	}
}

func TestHostSlotsOfAKilledSupervisorAreFree(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	// The child holds slot-00 of <state>/slots for its command.
	child, _, _ := startChildSupervisor(t, f, state)
	s := f.supervisor(t, func(c *Config) {
		c.SlotsDir = DefaultSlotsDir(state)
		c.Limits.LivePerHost = 1
	})
	var le *LimitError
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true"}); !errors.As(err, &le) {
		t.Fatalf("the only slot is the child's: %v", err)
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true"}); err != nil {
		t.Errorf("after the holder was killed: %v", err)
	}
}

// The limits of DESIGN.md §5, as a zero Config gives them: 8 live per
// session, 32 per host, 100 finished records per session.
func TestDefaultLimits(t *testing.T) {
	if DefaultLivePerSession != 8 || DefaultLivePerHost != 32 || DefaultFinishedPerSession != 100 {
		t.Fatalf("defaults %d, %d, %d; DESIGN.md §5 says 8, 32, 100", DefaultLivePerSession, DefaultLivePerHost, DefaultFinishedPerSession)
	}
	f := newFixture(t)
	s := f.supervisor(t, func(c *Config) {
		c.Limits = Limits{}
		c.StateDir = t.TempDir()
	})
	ctx := ctxT(t)
	run := func(session, cmd string) (Status, error) {
		return s.RunCommand(ctx, session, Command{Cmd: cmd, Wait: -1})
	}
	var le *LimitError
	for i := range 8 {
		if _, err := run("s0", "sleep 30"); err != nil {
			t.Fatalf("process %d of a session: %v", i+1, err)
		}
	}
	if _, err := run("s0", "sleep 30"); !errors.As(err, &le) || le.Limit != "live processes per session" || le.Max != 8 {
		t.Fatalf("a ninth in a session: %v", err)
	}
	for i := 8; i < 32; i++ {
		if _, err := run(fmt.Sprintf("s%d", i/8), "sleep 30"); err != nil {
			t.Fatalf("process %d of the host: %v", i+1, err)
		}
	}
	if _, err := run("s9", "sleep 30"); !errors.As(err, &le) || le.Limit != "live processes per host" || le.Max != 32 {
		t.Fatalf("a 33rd on the host: %v", err)
	}
	if err := s.CloseSession(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	var last Status
	for i := range 101 {
		st, err := s.RunCommand(ctx, "finished", Command{Cmd: "true", Wait: MaxWait})
		if err != nil || !st.Done {
			t.Fatalf("finished %d: %+v, %v", i, st.Handle, err)
		}
		last = st
	}
	list, err := s.List("finished")
	if err != nil || len(list) != 100 || list[99].Process != last.Process {
		t.Errorf("%d finished records kept, want the newest 100", len(list))
	}
}

// Cursor reads at the ring's edge: a cursor one byte before the earliest
// byte kept resumes there and says so; it never returns a byte the ring
// overwrote. Checked for every ring size in use, at every offset of a
// multi-byte character at the edge.
func TestRingCursorJustBeforeTheTail(t *testing.T) {
	for _, capacity := range []int{MaxPageBytes, MaxPageBytes + 1, DefaultRingBytes} {
		for extra := 1; extra <= 8; extra++ {
			r := NewRing(capacity)
			var all []byte
			for len(all) < capacity {
				all = append(all, "aé€😀"...)
			}
			r.Write(Stdout, all) // whole characters
			r.Write(Stderr, []byte(strings.Repeat("z", extra)))
			all = append(all, strings.Repeat("z", extra)...)
			earliest, head := r.Bounds()
			if head != int64(len(all)) || head-earliest != int64(capacity) {
				t.Fatalf("capacity %d: bounds %d..%d of %d", capacity, earliest, head, len(all))
			}
			for _, c := range []int64{earliest - 1, earliest, earliest + 1} {
				pg, err := r.Read(c, 8)
				if err != nil {
					t.Fatalf("Read(%d): %v", c, err)
				}
				if pg.Resumed != (c < earliest) || pg.Cursor < earliest {
					t.Errorf("capacity %d extra %d: Read(earliest%+d) = cursor %d resumed %v", capacity, extra, c-earliest, pg.Cursor, pg.Resumed)
				}
				if got, want := pg.Text(), string(all[pg.Cursor:pg.Cursor+int64(len(pg.Text()))]); got != want {
					t.Errorf("capacity %d extra %d: Read(earliest%+d) = %q, want %q", capacity, extra, c-earliest, got, want)
				}
			}
		}
	}
}
