package launcher

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/manifest"
)

// TestCheckLock: every problem Run would refuse, once each and in run's
// words; failed tools and capabilities without a backend are reported
// apart (the lock accepted them).
func TestCheckLock(t *testing.T) {
	f := newFixture(t)
	if problems, unusable := CheckLock(f.LockPath, f.Lock); problems != nil || unusable != nil {
		t.Fatalf("an empty lock: %v, %v", problems, unusable)
	}
	f.AddTool(t, "a", "echo a", nil)
	f.AddTool(t, "b", "echo b", nil)
	f.AddTool(t, "odd", "echo odd", nil).Kind = "shell"
	f.AddTool(t, "broken", "exit 1", nil).Probe = manifest.Probe{Status: manifest.StatusFailed, Detail: "down"}
	f.Lock.Capabilities["web"] = &manifest.Capability{Backends: []string{"broken"}, Required: true}

	problems, unusable := CheckLock(f.LockPath, f.Lock)
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), `tool "odd" is of unknown kind "shell"`) {
		t.Errorf("problems = %v", problems)
	}
	if len(unusable) != 2 || !strings.Contains(unusable[0].Error(), `tool "broken" did not pass its probe`) || !strings.Contains(unusable[1].Error(), `capability "web" has no usable backend`) {
		t.Errorf("unusable = %v", unusable)
	}

	// A changed toolbox file is one problem, not one per tool (run stops
	// there too); once it is back, a swapped binary is named in run's words.
	hcl := filepath.Join(f.Dir, "toolbox.hcl")
	locktest.WriteFile(t, hcl, "# edited\n", 0o644)
	problems, _ = CheckLock(f.LockPath, f.Lock)
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), `toolbox file "toolbox.hcl" changed`) {
		t.Fatalf("problems = %v", problems)
	}
	locktest.WriteFile(t, hcl, "sandbox = \"none\"\n", 0o644)
	locktest.WriteFile(t, filepath.Join(f.Dir, "tools", "a"), "#!/bin/sh\necho evil\n", 0o755)
	problems, _ = CheckLock(f.LockPath, f.Lock)
	want := Verify(f.LockPath, f.Lock, "a")
	if len(problems) != 2 || want == nil || problems[0].Error() != want.Error() {
		t.Errorf("problems = %v, want run's %v first", problems, want)
	}
}
