package helper

import (
	"bytes"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProcStat is the part of /proc/PID/stat the process tree walk needs.
type ProcStat struct {
	PID, PPID  int
	PGID, SID  int
	State      byte
	Start      uint64 // clock ticks after boot
	HasDetails bool   // PGID, SID and Start were read
}

// ReadStat parses /proc/PID/stat. The command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func ReadStat(pid int) (ProcStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return ProcStat{}, false
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return ProcStat{}, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return ProcStat{}, false
	}
	st := ProcStat{PID: pid, PPID: ppid, State: fields[0][0]}
	// fields[0] is field 3 (state): pgrp is field 5, session 6, starttime 22.
	if len(fields) >= 20 {
		pgid, err1 := strconv.Atoi(string(fields[2]))
		sid, err2 := strconv.Atoi(string(fields[3]))
		start, err3 := strconv.ParseUint(string(fields[19]), 10, 64)
		if err1 == nil && err2 == nil && err3 == nil {
			st.PGID, st.SID, st.Start, st.HasDetails = pgid, sid, start, true
		}
	}
	return st, true
}

// StartTimeOf is pid's start time (clock ticks after boot).
func StartTimeOf(pid int) (uint64, bool) {
	st, ok := ReadStat(pid)
	return st.Start, ok && st.HasDetails
}

// LiveDescendants lists the processes below root that have not exited yet
// (zombies are left to their parents), with the parent each was seen with.
func LiveDescendants(root int) map[int]int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]ProcStat{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ReadStat(pid); ok {
			children[st.PPID] = append(children[st.PPID], st)
		}
	}
	out := map[int]int{}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if _, seen := out[c.PID]; seen || c.PID == root {
				continue
			}
			queue = append(queue, c.PID)
			if c.State != 'Z' && c.State != 'X' {
				out[c.PID] = c.PPID
			}
		}
	}
	return out
}

// KillDescendants sends SIGKILL to every live process below root and
// returns how many it found. Each target is pinned with a pidfd and its
// parent checked again before the signal, so a pid reused by an unrelated
// process in between is not hit.
func KillDescendants(root int) int {
	ds := LiveDescendants(root)
	for pid, ppid := range ds {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already (or no pidfd support: nothing safe to do)
		}
		st, ok := ReadStat(pid)
		if _, parentIsOurs := ds[st.PPID]; ok && (st.PPID == ppid || st.PPID == root || parentIsOurs) {
			_ = unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
	return len(ds)
}
