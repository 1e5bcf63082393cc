package sandbox

import (
	"os"
	"strconv"

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
func Init() {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		os.Exit(runHelper())
	}
	markCloexec()
}

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
