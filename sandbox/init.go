package sandbox

import (
	"sync/atomic"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// Init must be the first call of the toolbox binary's main (and of a test
// binary's TestMain in packages that start landlock tools). It marks
// every descriptor above 2 close-on-exec, so that descriptors toolbox
// inherited from its own parent never leak into a child (Go opens its own
// descriptors close-on-exec already), and records that the binary can be
// re-executed as the sandbox helper. (The helper and the limits
// wrapper themselves run from this package's initialisation, before any
// main: see helperexe.go and package helper.)
//
// In a process that did not call Init, landlock refuses to start tools
// (ErrStartFailed) and Detect reports it unusable, saying why.
func Init() {
	helper.MarkCloexec()
	initDone.Store(true)
}

// initDone records that Init ran in this process. Without it the landlock
// helper cannot work (the re-executed binary would run its normal main;
// a test binary would even run its tests again, recursively), so landlock
// refuses to start.
var initDone atomic.Bool
