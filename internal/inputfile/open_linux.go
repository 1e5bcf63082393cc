package inputfile

import (
	"os"
	"syscall"
)

// openNonblocking opens path with O_NONBLOCK: opening a FIFO that has no
// writer returns at once instead of waiting for one. Reads of a regular
// file are not affected by the flag.
func openNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
