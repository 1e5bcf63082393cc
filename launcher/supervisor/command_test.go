package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/runspec"
)

func TestRunCommandReturnsTheFinalStatusWhenItFinishesInTime(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "echo out; echo err >&2; exit 3", Label: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Done || st.Status != StateFailed || st.ExitCode == nil || *st.ExitCode != 3 || st.Kind != KindCommand || st.Tool != CommandTool || st.Label != "demo" {
		t.Errorf("status = %+v", st)
	}
	if st.Stdout == nil || st.Stdout.Text != "out\n" || st.Stderr == nil || st.Stderr.Text != "err\n" {
		t.Fatalf("tails = %+v, %+v; want stdout and stderr apart, labelled", st.Stdout, st.Stderr)
	}
}

func TestRunCommandReturnsTheHandleWhenStillRunning(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	// Still running when the wait ends is the property (a wait that ran to
	// the end would say Done), so no clock is read: a loaded machine may
	// take longer than the command's sleep just to start the shell.
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "echo started; sleep 0.6; echo finished", Wait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if st.Done || st.Status != StateRunning {
		t.Fatalf("status = %+v, want a handle still running", st.Handle)
	}
	// Status with an inline wait sees it finish.
	st, err = s.Status(ctxT(t), "sess", st.Process, 5*time.Second)
	if err != nil || st.Status != StateExited || !strings.Contains(st.Stdout.Text, "finished") {
		t.Errorf("waited status = %+v, %v", st, err)
	}
	// No wait at all.
	st, err = s.RunCommand(ctxT(t), "sess", Command{Cmd: "sleep 0.3", Wait: -1})
	if err != nil || st.Done {
		t.Errorf("Wait -1: %+v, %v", st.Handle, err)
	}
}

func TestRunCommandNames(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "sleep 30", Name: "dev-server", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true", Name: "dev-server"}); !errors.Is(err, ErrNameInUse) || !strings.Contains(err.Error(), st.Process) {
		t.Errorf("reused running name: %v", err)
	}
	// Names are per session.
	if _, err := s.RunCommand(ctxT(t), "other", Command{Cmd: "true", Name: "dev-server"}); err != nil {
		t.Errorf("same name in another session: %v", err)
	}
	if _, err := s.Stop(ctxT(t), "sess", "dev-server", true); err != nil {
		t.Fatal(err)
	}
	again, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "echo second", Name: "dev-server"})
	if err != nil {
		t.Fatalf("name after its process finished: %v", err)
	}
	byName := mustStatus(t, s, "sess", "dev-server")
	if byName.Process != again.Process || byName.Process == st.Process {
		t.Errorf("the name resolves to %s, want the newest %s", byName.Process, again.Process)
	}
	for _, bad := range []string{"Dev", "a_b", strings.Repeat("a", 64), "p0a1b2c", "x y"} {
		if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true", Name: bad}); !errors.Is(err, ErrBadName) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true", Name: strings.Repeat("a", 63)}); err != nil {
		t.Errorf("63-character name: %v", err)
	}
}

func TestRunCommandEnvironmentCwdAndTimeout(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	dir := t.TempDir()
	st, err := s.RunCommand(ctxT(t), "sess-1", Command{
		Cmd:       `pwd; echo "$GREETING $TOOLBOX_SESSION $KEPT"`,
		Cwd:       dir,
		Env:       map[string]string{"GREETING": "hi"},
		CallerEnv: []string{"KEPT=yes", "PATH=" + os.Getenv("PATH")},
	})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got := st.Stdout.Text; got != real+"\nhi sess-1 yes\n" && got != dir+"\nhi sess-1 yes\n" {
		t.Errorf("output = %q", got)
	}
	st, err = s.RunCommand(ctxT(t), "sess", Command{Cmd: "sleep 30", Timeout: 200 * time.Millisecond, Wait: 5 * time.Second})
	if err != nil || st.Status != StateTimedOut || !strings.Contains(st.Reason, "timeout") {
		t.Errorf("timeout: %+v %q, %v", st.Handle, st.Reason, err)
	}
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true", Cwd: filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing cwd was accepted")
	}
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "  "}); err == nil {
		t.Error("an empty command was accepted")
	}
}

// TestRunCommandCwdIsRelativeToTheWorkspace: a command starts in the
// call's workspace, a relative cwd lies below it, and without a workspace a
// relative cwd is refused rather than taken against the supervisor's own
// directory, which means nothing to a daemon's caller.
func TestRunCommandCwdIsRelativeToTheWorkspace(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(ws)
	chosen := runspec.Workspace{Dir: ws, From: runspec.FromFlag}
	for cwd, want := range map[string]string{"": real, "sub": filepath.Join(real, "sub"), "sub/..": real} {
		st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "pwd", Cwd: cwd, Workspace: chosen, Wait: 5 * time.Second})
		if err != nil || st.Stdout == nil || st.Stdout.Text != want+"\n" {
			t.Errorf("cwd %q: %+v, %v; want %s", cwd, st.Stdout, err, want)
		}
	}
	none := runspec.Workspace{Dir: "/", From: runspec.FromFlag}
	_, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "pwd", Cwd: "sub", Workspace: none})
	if err == nil || !strings.Contains(err.Error(), `working directory "sub" is relative to the workspace, and this call has none (workspace "/" (--workspace)`) {
		t.Errorf("a relative cwd without a workspace: %v", err)
	}
	if st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "pwd", Cwd: ws, Workspace: none, Wait: 5 * time.Second}); err != nil || st.Stdout == nil || st.Stdout.Text != ws+"\n" && st.Stdout.Text != real+"\n" {
		t.Errorf("an absolute cwd without a workspace: %+v, %v", st.Stdout, err)
	}
}

func TestRunCommandNeedsTheBuiltin(t *testing.T) {
	f := newFixture(t)
	f.Lock.Builtins = nil
	s := f.supervisor(t)
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true"}); !errors.Is(err, ErrCommandsDisabled) {
		t.Errorf("error = %v", err)
	}
}

func TestStopReachesTheWholeGroup(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "sleep 30 & echo $! > " + pidfile + "; wait", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	child := readPidFile(t, pidfile)
	if _, err := s.Stop(ctxT(t), "sess", st.Process, false); err != nil {
		t.Fatal(err)
	}
	if alive(child) {
		t.Errorf("child %d of the command survived the stop", child)
	}
}

func TestLimits(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t, func(c *Config) {
		c.Limits.LivePerSession = 2
		c.Limits.LivePerHost = 3
	})
	run := func(session string) (Status, error) {
		return s.RunCommand(ctxT(t), session, Command{Cmd: "sleep 30", Wait: -1})
	}
	a, _ := run("one")
	if _, err := run("one"); err != nil {
		t.Fatal(err)
	}
	_, err := run("one")
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "live processes per session" || le.Max != 2 || !errors.Is(err, ErrLimit) {
		t.Fatalf("third in a session: %v", err)
	}
	if _, err := run("two"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("three"); !errors.As(err, &le) || le.Limit != "live processes per host" || le.Max != 3 {
		t.Fatalf("fourth on the host: %v", err)
	}
	// Nothing running was killed to make room.
	list, _ := s.List("one")
	for _, st := range list {
		if st.Status != StateRunning {
			t.Errorf("%s is %s after refused starts", st.Process, st.Status)
		}
	}
	// Stopping one frees its slot at once.
	if _, err := s.Stop(ctxT(t), "one", a.Process, true); err != nil {
		t.Fatal(err)
	}
	if _, err := run("one"); err != nil {
		t.Errorf("start after a stop: %v", err)
	}
}

// Sessions opened and abandoned (one finished command each) cost the
// supervisor nothing for ever: past FinishedPerHost finished records the
// oldest go, whatever their session, record files included, and a session
// left with nothing is forgotten; before, every session kept its records
// and its mailbox as long as the daemon ran. The twin: under the bound
// every session keeps its record.
func TestAbandonedSessionsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perHost  int
		sessions int
		wantKept int
	}{{"over", 3, 6, 3}, {"under", 10, 6, 6}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			state := t.TempDir()
			s := f.supervisor(t, func(c *Config) {
				c.StateDir = state
				c.Limits.FinishedPerHost = tc.perHost
			})
			var ids []string
			for i := range tc.sessions {
				st, err := s.RunCommand(ctxT(t), fmt.Sprintf("agent-%d", i), Command{Cmd: "true"})
				if err != nil || !st.Done {
					t.Fatalf("command %d: %+v, %v", i, st.Handle, err)
				}
				ids = append(ids, st.Process)
			}
			kept := 0
			for i, id := range ids {
				_, err := s.Status(ctxT(t), fmt.Sprintf("agent-%d", i), id, 0)
				switch {
				case err == nil:
					kept++
					if i < tc.sessions-tc.wantKept {
						t.Errorf("session %d's record (among the oldest) was kept", i)
					}
				case !errors.Is(err, ErrUnknownProcess):
					t.Errorf("status of %s: %v", id, err)
				}
			}
			recs, _ := os.ReadDir(filepath.Join(state, recordsDir))
			s.mu.Lock()
			sessions := len(s.sessions)
			s.mu.Unlock()
			if kept != tc.wantKept || len(recs) != tc.wantKept || sessions != tc.wantKept {
				t.Errorf("kept %d records, %d record files, %d sessions; want %d of each", kept, len(recs), sessions, tc.wantKept)
			}
		})
	}
}

func TestFinishedRecordsAreBounded(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	s := f.supervisor(t, func(c *Config) {
		c.StateDir = state
		c.LogBytes = 1 << 10
		c.Limits.FinishedPerSession = 3
	})
	running, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "sleep 30", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 5 {
		st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "echo " + strings.Repeat("x", i)})
		if err != nil || !st.Done {
			t.Fatalf("command %d: %+v, %v", i, st.Handle, err)
		}
		ids = append(ids, st.Process)
	}
	list, _ := s.List("sess")
	var got []string
	for _, st := range list {
		got = append(got, st.Process)
	}
	want := append([]string{running.Process}, ids[2:]...)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("records = %v, want the running one and the 3 newest finished %v", got, want)
	}
	recs, _ := os.ReadDir(filepath.Join(state, recordsDir))
	logs, _ := os.ReadDir(filepath.Join(state, logsDir))
	if len(recs) != 4 || len(logs) != 8 {
		t.Errorf("%d record files and %d log files, want 4 and 8", len(recs), len(logs))
	}
	if _, err := s.Status(ctxT(t), "sess", ids[0], 0); !errors.Is(err, ErrUnknownProcess) {
		t.Errorf("dropped record: %v", err)
	}
}

func TestLogFilesAreCapped(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	s := f.supervisor(t, func(c *Config) { c.StateDir = state; c.LogBytes = 1000 })
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "head -c 5000 /dev/zero | tr '\\0' a; echo oops >&2"})
	if err != nil || !st.Done {
		t.Fatalf("%+v, %v", st.Handle, err)
	}
	out, _ := os.ReadFile(st.Logs.Stdout)
	errs, _ := os.ReadFile(st.Logs.Stderr)
	if !strings.HasPrefix(string(out), strings.Repeat("a", 1000)+"\n[toolbox: log capped at 1000 bytes") || len(out) > 1100 {
		t.Errorf("stdout log = %d bytes: %.80q…", len(out), out[min(len(out), 990):])
	}
	if string(errs) != "oops\n" {
		t.Errorf("stderr log = %q", errs)
	}
	if st.Output.Head != 5005 {
		t.Errorf("ring head = %d, want every byte counted", st.Output.Head)
	}
}

func TestALaunchThatFailsLeavesNoRecord(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t, func(c *Config) { c.Shell = filepath.Join(t.TempDir(), "no-shell") })
	if _, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "true"}); !errors.Is(err, launcher.ErrNotFound) {
		t.Errorf("error = %v, want launcher.ErrNotFound", err)
	}
	if list, _ := s.List("sess"); len(list) != 0 {
		t.Errorf("records = %+v", list)
	}
	if err := s.Close(ctxT(t)); err != nil {
		t.Errorf("close after a failed launch: %v", err)
	}
}

func TestCloseStopsEverythingAndRefusesStarts(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	var pids []int
	for _, sess := range []string{"a", "b"} {
		st, err := s.RunCommand(ctxT(t), sess, Command{Cmd: "sleep 30", Wait: -1})
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, st.PID)
	}
	if err := s.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d outlived Close", pid)
		}
	}
	if list, _ := s.List("a"); len(list) != 1 || list[0].Status != StateStopped {
		t.Errorf("after Close: %+v", list)
	}
	if _, err := s.RunCommand(ctxT(t), "a", Command{Cmd: "true"}); !errors.Is(err, ErrClosed) {
		t.Errorf("start after Close: %v", err)
	}
}

// TestNameShapes: names are [a-z0-9-]{1,63}; ids are p and six hex digits.
func TestNameShapes(t *testing.T) {
	for s, want := range map[string]bool{"build": true, "dev-server-2": true, "": false, "Build": false, "a_b": false, strings.Repeat("a", 63): true, strings.Repeat("a", 64): false} {
		if validName(s) != want {
			t.Errorf("validName(%q) = %v", s, !want)
		}
	}
	for s, want := range map[string]bool{"p1a2b3c": true, "p1a2b3": false, "q1a2b3c": false, "p1A2b3c": false, "p1a2b3cd": false} {
		if looksLikeID(s) != want {
			t.Errorf("looksLikeID(%q) = %v", s, !want)
		}
	}
}
