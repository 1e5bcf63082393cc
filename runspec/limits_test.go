package runspec

import (
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// A lock's default processes limit is applied by the starts that can count
// a tool's processes and left out by the others (a lock made by another
// user runs here, rather than being refused); a processes limit the
// operator wrote is kept for the start to refuse.
func TestSetLimitsDefaultProcesses(t *testing.T) {
	if sandbox.DetectCgroup().Pids {
		t.Skip("cgroup v2 pids is delegated here: every processes limit is counted")
	}
	def := &manifest.Limits{MemoryBytes: 1 << 30, Processes: 4096, ProcessesDefault: true}
	for _, c := range []struct {
		what  string
		spec  sandbox.Spec
		l     *manifest.Limits
		procs uint64
	}{
		{"default, none as root", sandbox.Spec{Mechanism: sandbox.None, RunAs: &sandbox.Identity{UID: 0}}, def, 0},
		{"default, landlock as root", sandbox.Spec{Mechanism: sandbox.Landlock, RunAs: &sandbox.Identity{UID: 0}}, def, 0},
		{"default, bwrap as nobody", sandbox.Spec{Mechanism: sandbox.Bwrap, RunAs: &sandbox.Identity{UID: 65534}}, def, 4096},
		{"written, none as root", sandbox.Spec{Mechanism: sandbox.None, RunAs: &sandbox.Identity{UID: 0}}, &manifest.Limits{Processes: 256}, 256},
	} {
		s := c.spec
		setLimits(&s, c.l)
		if s.Limits.Processes != c.procs || s.Limits.Memory != c.l.MemoryBytes {
			t.Errorf("%s: limits %+v, want processes %d and memory %d", c.what, s.Limits, c.procs, c.l.MemoryBytes)
		}
		if c.procs != 0 && c.l.ProcessesDefault && sandbox.LimitsRefusal(s.Limits, s.Mechanism, s.RunAs.UID, sandbox.DetectCgroup()) != nil {
			t.Errorf("%s: the start would refuse %+v", c.what, s.Limits)
		}
	}
	var s sandbox.Spec
	if setLimits(&s, nil); !s.Limits.IsZero() {
		t.Errorf("nil limits: %+v", s.Limits)
	}
}
