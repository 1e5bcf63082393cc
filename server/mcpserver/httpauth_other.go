//go:build !linux

package mcpserver

import (
	"errors"
	"io/fs"
	"os"
)

// openNoFollow and fileOwner need Linux here: the token file is refused
// elsewhere.
func openNoFollow(string) (*os.File, error) {
	return nil, errors.New("reading a token file safely needs Linux")
}

func fileOwner(fs.FileInfo) (int, bool) { return -1, false }
