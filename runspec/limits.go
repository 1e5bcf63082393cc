package runspec

import (
	"os"

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

// setLimits gives spec the lock's limits l (nil: none) as a start of it
// can hold them: the default processes limit (manifest.Limits.
// ProcessesDefault) is left out where nothing counts the processes of a
// child under spec's mechanism and user (sandbox.LimitsRefusal), so that a
// lock made by root runs as another user and the reverse; a processes
// limit the operator wrote stays, and the start refuses it there. Call it
// once spec's Mechanism and RunAs are final.
func setLimits(spec *sandbox.Spec, l *manifest.Limits) {
	spec.Limits = Limits(l)
	if l == nil || !l.ProcessesDefault || spec.Limits.Processes == 0 {
		return
	}
	uid := uint32(os.Geteuid())
	if spec.RunAs != nil {
		uid = spec.RunAs.UID
	}
	if sandbox.LimitsRefusal(sandbox.Limits{Processes: spec.Limits.Processes}, spec.Mechanism, uid, sandbox.DetectCgroup()) != nil {
		spec.Limits.Processes = 0
	}
}
