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
