package manifest

import (
	"reflect"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

// TestUsableBackends: ok backends in order, then unverified ones; failed,
// skipped, unlocked and describe-less backends never.
func TestUsableBackends(t *testing.T) {
	tool := func(status string) *Tool {
		return &Tool{Describe: &protocol.Describe{}, Probe: Probe{Status: status}}
	}
	tools := map[string]*Tool{
		"u1": tool(StatusUnverified), "ok1": tool(StatusOK), "bad": tool(StatusFailed),
		"skip": tool(StatusSkipped), "ok2": tool(StatusOK), "nodoc": {Probe: Probe{Status: StatusOK}},
	}
	c := &Capability{Backends: []string{"u1", "bad", "ok1", "gone", "skip", "nodoc", "ok2"}}
	if got, want := c.UsableBackends(tools), []string{"ok1", "ok2", "u1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("UsableBackends = %v, want %v", got, want)
	}
	c = &Capability{Backends: []string{"bad", "skip"}}
	if got := c.UsableBackends(tools); len(got) != 0 {
		t.Errorf("no usable backend: got %v", got)
	}
}
