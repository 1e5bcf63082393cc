package launcher

import (
	"fmt"
	"path/filepath"

	"github.com/toolbox-dev/toolbox/manifest"
)

// VerifyToolboxFile checks that the toolbox file of the lock at lockPath
// (l.File.Path, relative to the lock's directory) is still the one locked
// (DESIGN.md §4). A failure is a *RefusedError whose fix is `toolbox lock`.
func VerifyToolboxFile(lockPath string, l *manifest.Lock) error {
	file := filepath.Join(filepath.Dir(lockPath), filepath.FromSlash(l.File.Path))
	if err := checkHash(file, l.File.SHA256); err != nil {
		return &RefusedError{
			What: fmt.Sprintf("toolbox file %q %s since the lock", l.File.Path, err),
			Fix:  relockFix,
		}
	}
	return nil
}
