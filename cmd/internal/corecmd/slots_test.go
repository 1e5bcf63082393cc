package corecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
)

// toolbox mcp counts its live processes in the state dir's slots, the
// daemon's (<state dir>/slots), not in its own records directory: two mcp
// and a serve of one state dir hold at most 32 together. Here the other
// supervisors are stood in for by this test, holding every slot.
func TestMCPSharesTheDaemonsHostCount(t *testing.T) {
	hcl := mcpFixture(t)
	lockPath := manifest.LockPath(hcl)
	l, err := manifest.Read(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	l.Builtins = []string{"process"}
	l.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	state := t.TempDir()
	opts := &MCPOptions{Globals: &cli.Globals{StateDir: state, IO: cli.IOStreams{Err: os.Stderr}}}
	sup, err := newMCPSupervisor(opts, lockPath, l, os.Environ(), runspec.Workspace{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSupervisor(opts, sup)
	for i := range supervisor.DefaultLivePerHost {
		f, err := os.OpenFile(filepath.Join(state, "slots", fmt.Sprintf("slot-%02d", i)), os.O_RDWR, 0)
		if err != nil {
			t.Fatalf("the mcp supervisor did not make the state dir's slot %d: %v", i, err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
	}
	var le *supervisor.LimitError
	_, err = sup.RunCommand(context.Background(), "s", supervisor.Command{Cmd: "true"})
	if !errors.As(err, &le) || le.Limit != "live processes per host" {
		t.Errorf("a start while the state dir's 32 slots are held elsewhere: %v", err)
	}
}
