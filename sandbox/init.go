package sandbox

import (
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Init must be the first call of the toolbox binary's main (and of a test
// binary's TestMain in packages that start landlock tools):
//
//   - when os.Args[1] is the hidden helper marker, the process is the
//     landlock helper started by Cmd or Start: Init runs it and exits with
//     the tool's exit code, never returning;
//   - otherwise it marks every descriptor above 2 close-on-exec, so that
//     descriptors toolbox inherited from its own parent never leak into a
//     child (Go opens its own descriptors close-on-exec already).
//
// In a process that did not call Init, landlock refuses to start tools
// (ErrStartFailed) and Detect reports it unusable, saying why. (The
// wrapper that gives a tool its limits under none runs from this
// package's initialisation and needs no Init: see limitexec.go.)
func Init() {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		// Nothing to flush: exit at once, without os.Exit's hooks (a race
		// build would sleep a second there).
		unix.Exit(runHelper())
	}
	markCloexec()
	initDone.Store(true)
}

// initDone records that Init ran in this process. Without it the landlock
// helper cannot work (the re-executed binary would run its normal main;
// a test binary would even run its tests again, recursively), so landlock
// refuses to start.
var initDone atomic.Bool

// markCloexec sets close-on-exec on every descriptor from 3 up, with
// close_range(2) where the kernel has it (5.11+), else one by one.
func markCloexec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
