package supervisor

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeState returns the capacity of the pipe f writes to and how many of
// its bytes are unread. ok is false when f is not a pipe whose state can
// be read.
func pipeState(f *os.File) (capacity, unread int, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var cerr, uerr error
	if err := rc.Control(func(fd uintptr) {
		capacity, cerr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		unread, uerr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
	}); err != nil || cerr != nil || uerr != nil {
		return 0, 0, false
	}
	return capacity, unread, true
}

// growPipe asks for a pipe of size bytes (F_SETPIPE_SZ). It is best
// effort: a system that refuses keeps the pipe as it is, and sends are
// then bounded by what it holds (pipeState).
func growPipe(f *os.File, size int) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) })
	}
}
