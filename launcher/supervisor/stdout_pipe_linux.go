package supervisor

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeQueued is how many bytes wait in the pipe of r (FIONREAD, TIOCINQ on Linux), asked on
// the descriptor without putting it in blocking mode.
func pipeQueued(r *os.File) (int64, error) {
	rc, err := r.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		return 0, err
	}
	return int64(n), ierr
}
