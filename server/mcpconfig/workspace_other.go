//go:build !linux

package mcpconfig

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WriteInWorkspace is Write for a file inside the workspace ws: a symbolic
// link on the way below ws, or at the file, is refused rather than
// followed (tools write the workspace). Without openat2 the check is by
// path, made once before the write (see the Linux version).
func WriteInWorkspace(ws, path string, c Client, s Server, now time.Time) (Written, error) {
	rel, err := filepath.Rel(ws, path)
	if err != nil || !filepath.IsLocal(rel) {
		return Written{File: path}, fmt.Errorf("writing %q: not inside the workspace %q", path, ws)
	}
	at := ws
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		if st, err := os.Lstat(at); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return Written{File: path}, fmt.Errorf("%q is a symbolic link inside the workspace %q: toolbox follows no link there (a tool may have planted it); replace it with the file or directory itself, or write elsewhere with --client-file", at, ws)
		}
	}
	return Write(path, c, s, now)
}
