package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// crashedSupervisor runs a supervisor in a child process that starts the
// background command cmd, lets prepare act on the command's pid (the
// sandbox helper that reaps it), then kills the supervisor with SIGKILL.
// It returns the command's process id and pid.
func crashedSupervisor(t *testing.T, f *fixture, state, cmd string, prepare func(pid int)) (string, int) {
	t.Helper()
	lockJSON := filepath.Join(t.TempDir(), "lock.json")
	data, err := json.Marshal(f.Lock)
	if err != nil {
		t.Fatal(err)
	}
	locktest.WriteFile(t, lockJSON, string(data), 0o600)
	child := exec.Command(os.Args[0], childSupervisorArg, state, lockJSON, f.LockPath, cmd)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	var pid int
	if _, err := fmt.Fscan(bufio.NewReader(out), &id, &pid); err != nil {
		_ = child.Process.Kill()
		t.Fatalf("reading the child's answer: %v", err)
	}
	prepare(pid)
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	return id, pid
}

// markers are sleeps only this test runs, one per process of a tree.
func markers(base int) []string {
	return []string{fmt.Sprintf("%d.%d", base, os.Getpid()%1000), fmt.Sprintf("%d.%d", base+1, os.Getpid()%1000)}
}

// treeCmd is a background command with a setsid grandchild and a child.
func treeCmd(m []string) string {
	return fmt.Sprintf("setsid sleep %s & sleep %s; wait", m[0], m[1])
}

func running(m []string) int {
	n := 0
	for _, s := range m {
		n += len(sleeps(s))
	}
	return n
}

// sleeps lists the pids of the live processes "sleep secs".
func sleeps(secs string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+secs+"\x00" {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			if alive(pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func killSleeps(m []string) {
	for _, s := range m {
		for _, pid := range sleeps(s) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// kill -9 of a supervisor with a background command running: the command
// and its setsid grandchild die with it within 2 s (the sandbox helper's
// parent-death signal); the next supervisor marks it lost and says
// nothing of it is left.
func TestKilledSupervisorsProcessesDieWithIt(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	m := markers(950)
	defer killSleeps(m)
	id, pid := crashedSupervisor(t, f, state, treeCmd(m), func(int) {
		testenv.Eventually(t, 5*time.Second, "the command's tree to start", func() bool { return running(m) == 2 })
	})
	killed := time.Now()
	testenv.Eventually(t, 2*time.Second, "the command's tree to die with its supervisor", func() bool { return running(m) == 0 && !alive(pid) })
	t.Logf("the tree was gone %s after the supervisor's death", time.Since(killed).Round(time.Millisecond))

	s := f.supervisor(t, func(c *Config) { c.StateDir = state })
	st, err := s.Status(ctxT(t), "crashy", "survivor", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Process != id || st.Status != StateLost || !strings.Contains(st.Reason, "none of its processes is left") {
		t.Errorf("status after the crash = %+v, %q", st.Handle, st.Reason)
	}
	// The name is free again: its process is finished.
	if _, err := s.RunCommand(ctxT(t), "crashy", Command{Cmd: "true", Name: "survivor"}); err != nil {
		t.Errorf("reusing the lost process's name: %v", err)
	}
}

// A lost process whose reaper could not act (stopped when its supervisor
// died) still runs: the next supervisor says so and leaves it alone, and
// Stop kills its whole tree, found again by pid and start time. The twin
// in TestDeadSupervisorsRecordsAreMarkedLost: a record without a start
// time is never signalled.
func TestStopKillsALostProcessStillRunning(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	m := markers(960)
	defer killSleeps(m)
	_, pid := crashedSupervisor(t, f, state, treeCmd(m), func(pid int) {
		testenv.Eventually(t, 5*time.Second, "the command's tree to start", func() bool { return running(m) == 2 })
		// The helper cannot act on its parent-death signal while stopped.
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	})
	defer syscall.Kill(pid, syscall.SIGKILL)

	s := f.supervisor(t, func(c *Config) { c.StateDir = state })
	st, err := s.Status(ctxT(t), "crashy", "survivor", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != StateLost || !strings.Contains(st.Reason, fmt.Sprintf("its processes still run (pid %d)", pid)) {
		t.Fatalf("status after the crash = %s, %q", st.Status, st.Reason)
	}
	if running(m) != 2 || !alive(pid) {
		t.Fatal("marking it lost signalled it")
	}
	start := time.Now()
	st, err = s.Stop(ctxT(t), "crashy", "survivor", false)
	if err != nil || st.Status != StateLost || !strings.Contains(st.Reason, "stopped by request") {
		t.Fatalf("Stop = %s %q, %v", st.Status, st.Reason, err)
	}
	testenv.Eventually(t, 2*time.Second, "the lost tree to be killed", func() bool { return running(m) == 0 && !alive(pid) })
	t.Logf("killed in %s", time.Since(start).Round(time.Millisecond))
	if r := readRecord(t, state, st.Process); !strings.Contains(r.Reason, "stopped by request") || r.PIDStart == 0 {
		t.Errorf("record after the stop = %+v", r)
	}
}

// kill -9 of a supervisor whose command had written output (no log
// files): the next supervisor says how much was written and that it is
// lost (cursors 0 to N gone, bytes per stream), in Status and in the
// output page, instead of an empty range as if nothing had been written.
// The record counts the output within outputFlush of its writing. The
// twin: a command that wrote nothing keeps no count.
func TestLostOutputIsCounted(t *testing.T) {
	for _, tc := range []struct {
		name, cmd      string
		stdout, stderr int64
	}{
		{"wrote", "printf 'twelve bytes'; printf 'err' >&2; exec sleep 60", 12, 3},
		{"silent", "exec sleep 60", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			state := t.TempDir()
			counted := false
			id, pid := crashedSupervisor(t, f, state, tc.cmd, func(int) {
				// No t.Fatal here: the child supervisor must be killed.
				for end := time.Now().Add(5 * time.Second); tc.stdout > 0 && !counted && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					recs, _ := ReadRecords(state)
					counted = len(recs) == 1 && recs[0].Output != nil && recs[0].Output.Head == tc.stdout+tc.stderr
				}
			})
			if tc.stdout > 0 && !counted {
				t.Errorf("the record did not count the output within 5 s (outputFlush is %s)", outputFlush)
			}
			testenv.Eventually(t, 2*time.Second, "the command to die with its supervisor", func() bool { return !alive(pid) })
			s := f.supervisor(t, func(c *Config) { c.StateDir = state })
			st, err := s.Status(ctxT(t), "crashy", id, 0)
			if err != nil {
				t.Fatal(err)
			}
			pg, err := s.Output("crashy", id, 0, 1024)
			if err != nil {
				t.Fatal(err)
			}
			head := tc.stdout + tc.stderr
			if tc.stdout == 0 {
				if st.Output.Head != 0 || len(st.Notes) != 0 || strings.Contains(pg.Note, "bytes of output") {
					t.Errorf("a silent lost command: output %+v, notes %q, page note %q", st.Output, st.Notes, pg.Note)
				}
				return
			}
			want := fmt.Sprintf("the %d bytes of output it had written by", head)
			detail := fmt.Sprintf("(cursors 0 to %d: %d of stdout, %d of stderr)", head, tc.stdout, tc.stderr)
			if st.Output.Head != head || st.Output.Earliest != head || len(st.Notes) != 1 || !strings.Contains(st.Notes[0], want) || !strings.Contains(st.Notes[0], detail) {
				t.Errorf("status of the lost command: output %+v, notes %q; want head %d and a note saying %q %q", st.Output, st.Notes, head, want, detail)
			}
			if pg.Head != head || pg.Next != head || !strings.Contains(pg.Note, want) || !strings.Contains(pg.Note, "serve --log-bytes") {
				t.Errorf("output page of the lost command: %+v", pg)
			}
		})
	}
}
