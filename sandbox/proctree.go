package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procStat is the part of /proc/PID/stat the process tree walk needs.
type procStat struct {
	pid, ppid  int
	pgid, sid  int
	state      byte
	start      uint64 // clock ticks after boot
	hasDetails bool   // pgid, sid and start were read
}

// readStat parses /proc/PID/stat. The command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func readStat(pid int) (procStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return procStat{}, false
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return procStat{}, false
	}
	st := procStat{pid: pid, ppid: ppid, state: fields[0][0]}
	// fields[0] is field 3 (state): pgrp is field 5, session 6, starttime 22.
	if len(fields) >= 20 {
		pgid, err1 := strconv.Atoi(string(fields[2]))
		sid, err2 := strconv.Atoi(string(fields[3]))
		start, err3 := strconv.ParseUint(string(fields[19]), 10, 64)
		if err1 == nil && err2 == nil && err3 == nil {
			st.pgid, st.sid, st.start, st.hasDetails = pgid, sid, start, true
		}
	}
	return st, true
}

// startTimeOf is pid's start time (clock ticks after boot).
func startTimeOf(pid int) (uint64, bool) {
	st, ok := readStat(pid)
	return st.start, ok && st.hasDetails
}

// liveDescendants lists the processes below root that have not exited yet
// (zombies are left to their parents), with the parent each was seen with.
func liveDescendants(root int) map[int]int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]procStat{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			children[st.ppid] = append(children[st.ppid], st)
		}
	}
	out := map[int]int{}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if _, seen := out[c.pid]; seen || c.pid == root {
				continue
			}
			queue = append(queue, c.pid)
			if c.state != 'Z' && c.state != 'X' {
				out[c.pid] = c.ppid
			}
		}
	}
	return out
}

// killDescendants sends SIGKILL to every live process below root and
// returns how many it found. Each target is pinned with a pidfd and its
// parent checked again before the signal, so a pid reused by an unrelated
// process in between is not hit.
func killDescendants(root int) int {
	ds := liveDescendants(root)
	for pid, ppid := range ds {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already (or no pidfd support: nothing safe to do)
		}
		st, ok := readStat(pid)
		if _, parentIsOurs := ds[st.ppid]; ok && (st.ppid == ppid || st.ppid == root || parentIsOurs) {
			_ = unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
	return len(ds)
}

// killTree kills every descendant of root, repeating while new ones show
// up (orphans reparented to root, children forked before the signal
// landed), for at most about a second.
func killTree(root int) {
	deadline := time.Now().Add(time.Second)
	for killDescendants(root) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}
