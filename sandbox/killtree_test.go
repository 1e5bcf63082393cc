package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// KillTree finds a process whose owner is gone by its pid and start time
// and kills everything of it: its children, a setsid grandchild, and a
// member of its group whose parent already exited (reparented away). The
// twin: the same pid with another start time (a reused pid) is never
// signalled.
func TestKillTreeOfLostProcess(t *testing.T) {
	requireSetsid(t)
	const base = 940
	marks := make([]string, 3)
	for i := range marks {
		marks[i] = fmt.Sprintf("%d.%d", base+i, os.Getpid()%1000)
	}
	script := fmt.Sprintf(`setsid sleep %s & sleep %s & (sleep %s &); echo ready; wait`, marks[0], marks[1], marks[2])
	c := exec.Command("/bin/sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := c.StdoutPipe()
	must(t, err)
	must(t, c.Start())
	defer func() {
		for _, m := range marks {
			killAll(processesWithArgs("sleep", m))
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	}()
	buf := make([]byte, 6)
	if n, _ := out.Read(buf); string(buf[:n]) != "ready\n" {
		t.Fatalf("the tree did not start: %q", buf[:n])
	}
	all := func(want int) bool {
		n := 0
		for _, m := range marks {
			n += len(processesWithArgs("sleep", m))
		}
		return n == want
	}
	if !eventually(func() bool { return all(3) }) {
		t.Fatal("the tree's sleeps did not all start")
	}
	start, ok := helper.StartTimeOf(c.Process.Pid)
	if !ok {
		t.Fatal("no start time")
	}

	if n, err := KillTree(c.Process.Pid, start+1); err != os.ErrProcessDone || n != 0 {
		t.Fatalf("another start time: KillTree = %d, %v; want 0, os.ErrProcessDone", n, err)
	}
	if !all(3) || syscall.Kill(c.Process.Pid, 0) != nil {
		t.Fatal("twin: a process with another start time was signalled")
	}

	n, err := KillTree(c.Process.Pid, start)
	if err != nil || n < 4 {
		t.Fatalf("KillTree = %d, %v; want the shell and its 3 sleeps", n, err)
	}
	if !eventually(func() bool { return all(0) }) {
		t.Fatalf("left alive: %v %v %v", processesWithArgs("sleep", marks[0]), processesWithArgs("sleep", marks[1]), processesWithArgs("sleep", marks[2]))
	}
	if n, err := KillTree(c.Process.Pid, start); err != os.ErrProcessDone || n != 0 {
		t.Fatalf("again: KillTree = %d, %v; want 0, os.ErrProcessDone", n, err)
	}
}
