package sandbox

import (
	"time"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// killTree kills every descendant of root, repeating while new ones show
// up (orphans reparented to root, children forked before the signal
// landed), for at most about a second.
func killTree(root int) {
	deadline := time.Now().Add(time.Second)
	for helper.KillDescendants(root) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}
