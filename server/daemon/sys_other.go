//go:build !linux

package daemon

import (
	"errors"
	"io/fs"
	"os"
)

// errUnsupported: the daemon checks its peers with SO_PEERCRED, which only
// Linux has here.
var errUnsupported = errors.New("toolbox serve runs on Linux only (it checks its peers with SO_PEERCRED)")

func tryLock(*os.File) error { return errUnsupported }

func ownerUID(fs.FileInfo) (int, bool) { return 0, false }

func inode(fs.FileInfo) uint64 { return 0 }
