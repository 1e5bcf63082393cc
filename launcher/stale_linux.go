package launcher

import (
	"io/fs"
	"syscall"
	"time"
)

// changedAfter says whether the file of st may have changed after t: its
// modification time or its change time is not earlier (file times are
// taken from a clock of a few milliseconds' grain, so an equal time may
// be a later write). The change time is the kernel's and cannot be set
// back: writing a file and then restoring its modification time with
// utimes moves it.
func changedAfter(st fs.FileInfo, t time.Time) bool {
	if !st.ModTime().Before(t) {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return !ok || !time.Unix(sys.Ctim.Sec, sys.Ctim.Nsec).Before(t)
}
