package runspec

import (
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Limits converts a lock's resource limits (nil: none) into the sandbox's
// form: the launcher applies exactly what was locked (DESIGN.md §4).
func Limits(l *manifest.Limits) sandbox.Limits {
	if l == nil {
		return sandbox.Limits{}
	}
	return sandbox.Limits{
		Memory: l.MemoryBytes, FileSize: l.FileSizeBytes, OpenFiles: l.OpenFiles,
		CPUSeconds: l.CPUSeconds, Processes: l.Processes, TmpSize: l.TmpSizeBytes,
	}
}
