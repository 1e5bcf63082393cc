package sandbox

import "github.com/toolbox-dev/toolbox/sandbox/helper"

// Prefetch starts, in the background, the work a start under spec will
// need and that depends only on its mechanism and declarations (today the
// seccomp filter: its copy for bwrap and landlock, and on architectures
// without pre-assembled programs its compilation, about 0.3 ms in a fresh
// process), so that
// it overlaps the caller's own preparation: `toolbox run` calls it before
// it verifies the lock. A nil spec means None. Start waits for what is in
// progress instead of doing it again; errors surface there.
func Prefetch(spec *Spec) {
	var s Spec
	if spec != nil {
		s = *spec
	}
	switch s.Mechanism {
	case Bwrap, Landlock:
		go func() { _, _ = s.filterBytes(s.Mechanism) }()
	case "", None:
		if helper.HasCapSysAdmin() { // PrepareForkThread loads the terminal filter
			go func() { _, _ = program(filterRules{}, true) }()
		}
	}
}
