package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolbox-dev/toolbox/internal/locktest"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
)

// childSupervisorArg makes the test binary a supervisor that starts one
// background command ("sleep 60", or the optional last argument), prints
// its id and pid, and waits to be killed:
// argv = [exe, childSupervisorArg, stateDir, lockJSON, lockPath, [cmd]].
const childSupervisorArg = "__supervisor-test-child"

func childSupervisor(args []string) int {
	if len(args) != 3 && len(args) != 4 {
		fmt.Fprintln(os.Stderr, "want stateDir lockJSON lockPath [cmd]")
		return 2
	}
	cmd := "sleep 60"
	if len(args) == 4 {
		cmd = args[3]
	}
	data, err := os.ReadFile(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var lock manifest.Lock
	if err := json.Unmarshal(data, &lock); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := New(Config{StateDir: args[0], Lock: &lock, LockPath: args[2], CallerEnv: os.Environ()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := s.RunCommand(context.Background(), "crashy", Command{Cmd: cmd, Name: "survivor", Wait: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(st.Process, st.PID)
	select {} // until SIGKILL
}

func TestRecordsFollowEveryStateChange(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	s := f.supervisor(t, func(c *Config) { c.StateDir = state })
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "sleep 30", Name: "nap", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, state, st.Process)
	if rec.State != StateRunning || rec.PID != st.PID || rec.PGID != st.PID || rec.Name != "nap" || rec.Session != "sess" || rec.Command != "sleep 30" {
		t.Errorf("record while running = %+v", rec)
	}
	if rec.Owner.PID != os.Getpid() || rec.Owner.Instance == "" || rec.Owner.StartTime == 0 {
		t.Errorf("owner = %+v", rec.Owner)
	}
	if _, err := s.Stop(ctxT(t), "sess", "nap", false); err != nil {
		t.Fatal(err)
	}
	rec = readRecord(t, state, st.Process)
	if rec.State != StateStopped || rec.Ended == nil || rec.ExitCode == nil {
		t.Errorf("record after stop = %+v", rec)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, recordsDir)); len(ents) != 1 {
		t.Errorf("%d files in the records dir, want 1 (no temp files left)", len(ents))
	}
}

func readRecord(t testing.TB, state, id string) Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, recordsDir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A record whose supervisor is dead is marked lost, its process is not
// signalled, and its session is told.
func TestDeadSupervisorsRecordsAreMarkedLost(t *testing.T) {
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, recordsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	// A real process the dead supervisor "ran": it must survive untouched.
	orphan := exec.Command("sleep", "30")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(orphan.Process.Pid); _ = orphan.Wait() })
	self, _, err := procStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Minute)
	dead := Owner{Instance: "deadbeef", PID: os.Getpid(), StartTime: self + 1} // our pid, another start time: reused
	code := 0
	recs := []Record{
		{ID: "p000001", Session: "s1", Kind: KindCommand, Tool: CommandTool, Command: "sleep 30", PID: orphan.Process.Pid, PGID: orphan.Process.Pid, State: StateRunning, Since: started, Started: started, Owner: dead},
		{ID: "p000002", Session: "s1", Kind: KindCommand, Tool: CommandTool, Command: "true", State: StateExited, ExitCode: &code, Since: started, Started: started, Owner: dead},
		{ID: "p000003", Session: "s2", Kind: KindService, Tool: "svc", State: StateRestarting, Since: started, Started: started, Owner: Owner{Instance: "gone", PID: 1 << 22, StartTime: 1}},
	}
	for _, r := range recs {
		if err := writeRecord(state, r); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	list, _ := s.List("s1")
	if len(list) != 2 || list[0].Status != StateLost || list[1].Status != StateExited {
		t.Fatalf("session s1 = %+v, want the running process lost and the exited one kept", list)
	}
	if !strings.Contains(list[0].Reason, "supervisor") || !list[0].Done {
		t.Errorf("lost reason = %q", list[0].Reason)
	}
	if r := readRecord(t, state, "p000001"); r.State != StateLost || r.Ended == nil {
		t.Errorf("record on disk = %+v", r)
	}
	if r := readRecord(t, state, "p000003"); r.State != StateLost {
		t.Errorf("restarting record on disk = %s, want lost", r.State)
	}
	if !alive(orphan.Process.Pid) {
		t.Error("the lost process was signalled; it must be left alone")
	}
	inbox, _ := s.Inbox("s1", 0, 0)
	if len(inbox.Mails) != 1 || inbox.Mails[0].Kind != MailExit || inbox.Mails[0].State != StateLost || inbox.Mails[0].Process != "p000001" {
		t.Errorf("s1 inbox = %+v, want one lost mail", inbox.Mails)
	}
	pg, err := s.Output("s1", "p000001", 0, 0)
	if err != nil || !strings.Contains(pg.Note, "not kept") {
		t.Errorf("output of a lost process = %+v, %v", pg, err)
	}
	if st, err := s.Stop(ctxT(t), "s1", "p000001", true); err != nil || st.Status != StateLost {
		t.Errorf("stop of a lost process = %s, %v; want lost, untouched", st.Status, err)
	}
	if !alive(orphan.Process.Pid) {
		t.Error("Stop of a lost record signalled its process")
	}
}

// A supervisor that is alive keeps its records: another one on the same
// state dir neither loads nor marks them.
func TestLiveSupervisorsRecordsAreLeftAlone(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	a := f.supervisor(t, func(c *Config) { c.StateDir = state })
	st, err := a.RunCommand(ctxT(t), "sess", Command{Cmd: "sleep 30", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	b := f.supervisor(t, func(c *Config) { c.StateDir = state })
	if list, _ := b.List("sess"); len(list) != 0 {
		t.Errorf("second supervisor loaded %+v", list)
	}
	if r := readRecord(t, state, st.Process); r.State != StateRunning {
		t.Errorf("record = %s, want running", r.State)
	}
}

// startChildSupervisor runs childSupervisor on state with f's lock and
// returns it with its command's id and pid (killed at the test's end).
func startChildSupervisor(t *testing.T, f *fixture, state string) (child *exec.Cmd, id string, pid int) {
	t.Helper()
	lockJSON := filepath.Join(t.TempDir(), "lock.json")
	data, err := json.Marshal(f.Lock)
	if err != nil {
		t.Fatal(err)
	}
	locktest.WriteFile(t, lockJSON, string(data), 0o600)
	child = exec.Command(os.Args[0], childSupervisorArg, state, lockJSON, f.LockPath)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fscan(bufio.NewReader(out), &id, &pid); err != nil {
		_ = child.Process.Kill()
		t.Fatalf("reading the child's answer: %v", err)
	}
	t.Cleanup(func() { killGroup(pid) })
	return child, id, pid
}

func TestProcStartTimeTellsReusedPidsApart(t *testing.T) {
	st, state, err := procStartTime(os.Getpid())
	if err != nil || st == 0 || state == 'Z' {
		t.Fatalf("procStartTime(self) = %d %c %v", st, state, err)
	}
	if !(Owner{PID: os.Getpid(), StartTime: st}).Alive() {
		t.Error("self not alive")
	}
	if (Owner{PID: os.Getpid(), StartTime: st + 1}).Alive() {
		t.Error("another start time is the same process")
	}
	if (Owner{PID: 1 << 22, StartTime: st}).Alive() {
		t.Error("a pid that does not exist is alive")
	}
}

// TestCrashLeftoversOfRecordWritesAreRemoved: a supervisor killed between
// creating a record's temporary file and renaming it leaves a half-written
// file behind; the next supervisor on the state dir removes such files
// once they are old enough that no live writer can still own them, and
// keeps a fresh one (another live supervisor, an mcp of the same state
// dir, may be writing it now) and every record.
func TestCrashLeftoversOfRecordWritesAreRemoved(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, recordsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Hour)
	code := 0
	rec := Record{ID: "p000001", Session: "s1", Kind: KindCommand, Tool: CommandTool, Command: "true", State: StateExited, ExitCode: &code, Since: started, Started: started, Owner: Owner{Instance: "gone", PID: 1 << 22, StartTime: 1}}
	if err := writeRecord(state, rec); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".p000002.123456.tmp")
	fresh := filepath.Join(dir, ".p000003.654321.tmp")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte(`{"id": "p0000`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTempAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stale temporary file is still there (%v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temporary file was removed: %v", err)
	}
	if list, _ := s.List("s1"); len(list) != 1 || list[0].Status != StateExited {
		t.Errorf("session s1 = %+v, want its record kept", list)
	}
}
