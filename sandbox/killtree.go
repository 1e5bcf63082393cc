package sandbox

import (
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// KillTree kills (SIGKILL) the process pid that started at start (its
// Process.StartTime), every process below it, and every member of its
// session and process group, and returns how many processes it found
// (the leader included).
// It is for a process whose owner is gone (a supervisor's `lost` record),
// which Process.Signal can no longer reach.
//
// It never signals a pid that now belongs to another process: the leader
// is pinned with a pidfd and its start time checked while pinned, and each
// other target is pinned and checked again (its parent, or its session or
// group while the leader is known to be alive, which keeps those ids from
// being reused). When the leader is gone, or pid belongs to a process that
// started at another time, nothing is signalled and the error is
// os.ErrProcessDone: processes that left a dead leader's tree cannot be
// told apart from unrelated ones safely. Under bwrap the leader is bwrap,
// under landlock and None the sandbox helper.
func KillTree(pid int, start uint64) (int, error) {
	if pid <= 0 || start == 0 {
		return 0, os.ErrProcessDone
	}
	leader, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, os.ErrProcessDone
	}
	defer unix.Close(leader)
	if st, ok := helper.ReadStat(pid); !ok || !st.HasDetails || st.Start != start || st.State == 'Z' || st.State == 'X' {
		return 0, os.ErrProcessDone
	}
	// Repeat while processes are found (forked meanwhile, or killed but
	// not dead yet), for about a second at most.
	n := 0
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		k := helper.KillDescendants(pid) + killMembers(pid, leader)
		n = max(n, k)
		if k == 0 {
			break
		}
	}
	if unix.PidfdSendSignal(leader, syscall.SIGKILL, nil, 0) == nil {
		n++
	}
	return n, nil
}

// killMembers kills the processes of leader's session or process group
// (id pid) that are not below it (their parent died and they were
// reparented), each pinned and checked while the leader is alive.
func killMembers(pid, leader int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		st, ok := helper.ReadStat(p)
		if !ok || !st.HasDetails || st.PGID != pid && st.SID != pid || st.State == 'Z' || st.State == 'X' {
			continue
		}
		fd, err := unix.PidfdOpen(p, 0)
		if err != nil {
			continue
		}
		again, ok := helper.ReadStat(p)
		// The leader alive now means the ids pid still name its session
		// and group, so a member read after the pin is one of them.
		alive := unix.PidfdSendSignal(leader, 0, nil, 0) == nil
		if ok && again.Start == st.Start && (again.PGID == pid || again.SID == pid) && alive {
			if unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0) == nil {
				n++
			}
		}
		unix.Close(fd)
	}
	return n
}
