//go:build !linux

package launcher

import (
	"io/fs"
	"time"
)

// changedAfter says whether the file of st may have changed after t: its
// modification time is not earlier (the change time is not read here).
func changedAfter(st fs.FileInfo, t time.Time) bool {
	return !st.ModTime().Before(t)
}
