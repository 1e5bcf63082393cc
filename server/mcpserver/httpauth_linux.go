package mcpserver

import (
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path for reading, refusing a symlink in its last
// element (a token file is never reached through a link).
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}

// fileOwner is the uid owning the file.
func fileOwner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(st.Uid), true
}
