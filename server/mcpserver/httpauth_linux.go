package mcpserver

import (
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path for reading, refusing a symlink in its last
// element (a token file is never reached through a link). O_NONBLOCK: a
// FIFO there opens at once (and is then refused as not a regular file)
// instead of waiting for a writer; reads of a regular file ignore it.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

// fileOwner is the uid owning the file.
func fileOwner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(st.Uid), true
}
