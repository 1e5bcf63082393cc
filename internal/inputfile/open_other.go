//go:build !linux

package inputfile

import "os"

// openNonblocking is a plain open where O_NONBLOCK is not known to be
// harmless: the kind is still checked before anything is read.
func openNonblocking(path string) (*os.File, error) { return os.Open(path) }
