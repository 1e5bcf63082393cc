//go:build !linux

package supervisor

import "os"

// pipeState cannot read a pipe's state here: sends write at once, and a
// process that does not read can leave part of an event written.
func pipeState(*os.File) (capacity, unread int, ok bool) { return 0, 0, false }

func growPipe(*os.File, int) {}
