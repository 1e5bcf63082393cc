package plugins_test

import (
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol/validate"
)

// The read_file plugin backs a capability beside the default toolbox's exec
// tool: through the host (which validates its describe document), its args
// must be identical to the exec tool's, and its runtime the same. The
// example module links no validator, so this check lives on the host side.
func TestReadFilePluginDescribesAsItsExecTwin(t *testing.T) {
	twin, err := filepath.Abs(filepath.Join("..", "toolboxes", "default", "tools", "read_file"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := exec.Command(twin, "describe").Output()
	if err != nil {
		t.Fatalf("%s describe: %v", twin, err)
	}
	want, err := validate.ParseDescribe(data)
	if err != nil {
		t.Fatal(err)
	}
	c := startExample(t, "read_file", t.TempDir())
	got, _, err := c.Describe(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	// Only a plugin declares how many calls one process serves at once
	// (an exec tool runs each call in a process of its own).
	if got.Runtime != nil {
		rt := *got.Runtime
		rt.Concurrency = 0
		got.Runtime = &rt
	}
	for what, pair := range map[string][2]any{
		"args":         {got.Args, want.Args},
		"runtime":      {got.Runtime, want.Runtime},
		"process":      {got.Process, want.Process},
		"empty-result": {got.EmptyResult, want.EmptyResult},
		"description":  {got.Description, want.Description},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s differs from the exec tool's:\n%+v\n%+v", what, pair[0], pair[1])
		}
	}
}
