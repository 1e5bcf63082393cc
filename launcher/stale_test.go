package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/manifest"
)

// bigTool adds a tool whose script is larger than QuickHashBytes (a
// comment pads it), so CheckStale hashes it only when it changed after the
// lock file was written.
func bigTool(t *testing.T, f *fixture, name string) string {
	t.Helper()
	f.AddTool(t, name, "echo big\n#"+strings.Repeat("x", QuickHashBytes), nil)
	return filepath.Join(f.Dir, "tools", name)
}

// writeLock writes f's lock to disk, its modification time at. File
// times come from a coarse clock: a lock meant to be older than the
// writes that follow is dated a second back.
func writeLock(t *testing.T, f *fixture, at time.Time) {
	t.Helper()
	if err := manifest.Write(f.LockPath, f.Lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f.LockPath, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestCheckStale: what a run would refuse, found without running
// anything, in run's words, once each; tools whose probe failed are left
// out as CheckLock leaves them.
func TestCheckStale(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "a", "echo a", nil)
	f.AddTool(t, "b", "echo b", nil)
	f.AddTool(t, "gone", "exit 1", nil).Probe = manifest.Probe{Status: manifest.StatusFailed}
	f.Lock.Tools["a2"] = f.Lock.Tools["a"] // two tools of one binary
	writeLock(t, f, time.Now().Add(-time.Second))
	if problems := CheckStale(f.LockPath, f.Lock, nil); problems != nil {
		t.Fatalf("a fresh lock: %v", problems)
	}

	// A changed script: one problem for its two tools, as run says it.
	os.Remove(filepath.Join(f.Dir, "tools", "gone"))
	locktest.WriteFile(t, filepath.Join(f.Dir, "tools", "a"), "#!/bin/sh\necho evil\n", 0o755)
	problems := CheckStale(f.LockPath, f.Lock, nil)
	want := Verify(f.LockPath, f.Lock, "a")
	if len(problems) != 1 || want == nil || problems[0].Error() != want.Error() {
		t.Errorf("problems = %v, want run's %v once", problems, want)
	}

	// A changed toolbox file comes first, said once.
	locktest.WriteFile(t, filepath.Join(f.Dir, "toolbox.hcl"), "# edited\n", 0o644)
	problems = CheckStale(f.LockPath, f.Lock, CheckToolboxFile(f.LockPath, f.Lock))
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), `toolbox file "toolbox.hcl" changed`) {
		t.Errorf("problems = %v", problems)
	}
}

// TestCheckStaleLargeBinaries: a binary larger than QuickHashBytes is
// hashed when it changed after the lock was written, and only then.
func TestCheckStaleLargeBinaries(t *testing.T) {
	f := newFixture(t)
	big := bigTool(t, f, "big")
	writeLock(t, f, time.Now().Add(-time.Second))
	if problems := CheckStale(f.LockPath, f.Lock, nil); problems != nil {
		t.Fatalf("a fresh lock: %v", problems)
	}
	// Changed after the lock: hashed, and refused in run's words.
	locktest.WriteFile(t, big, "#!/bin/sh\necho swapped\n#"+strings.Repeat("y", QuickHashBytes), 0o755)
	problems := CheckStale(f.LockPath, f.Lock, nil)
	want := Verify(f.LockPath, f.Lock, "big")
	if len(problems) != 1 || want == nil || problems[0].Error() != want.Error() {
		t.Fatalf("problems = %v, want run's %v", problems, want)
	}
	// The attack: its modification time set back before the lock's. The
	// change time, which only the kernel sets, still tells.
	old := time.Now().Add(-24 * time.Hour)
	if err := os.Chtimes(big, old, old); err != nil {
		t.Fatal(err)
	}
	if problems := CheckStale(f.LockPath, f.Lock, nil); len(problems) != 1 {
		t.Errorf("a binary whose mtime was set back: problems = %v, want 1", problems)
	}
	// The cost: untouched since the lock was written (its time moved
	// forward here), the large binary is not read, whatever it holds.
	writeLock(t, f, time.Now().Add(time.Hour))
	if problems := CheckStale(f.LockPath, f.Lock, nil); problems != nil {
		t.Errorf("a large binary older than the lock was hashed: %v", problems)
	}
	// A small one always is.
	f.AddTool(t, "small", "echo small", nil)
	writeLock(t, f, time.Now().Add(time.Hour))
	locktest.WriteFile(t, filepath.Join(f.Dir, "tools", "small"), "#!/bin/sh\necho other\n", 0o755)
	if problems := CheckStale(f.LockPath, f.Lock, nil); len(problems) != 1 || !strings.Contains(problems[0].Error(), `tool "small"`) {
		t.Errorf("a small binary older than the lock: problems = %v", problems)
	}
}

// TestCheckStaleDistinctFiles: a tool whose binary's path reads as an MCP
// server's executable and entry script run together ("/bin/true" + "/x")
// does not stand for that server: the server's changed files are still
// reported (they were skipped as already checked).
func TestCheckStaleDistinctFiles(t *testing.T) {
	f := newFixture(t)
	lockLook(t, f, "")
	f.Lock.MCPServers["srv"].Entry = &manifest.HashedFile{Path: "/x", SHA256: strings.Repeat("0", 64)}
	rel, err := filepath.Rel(f.Dir, "/bin/true/x")
	if err != nil {
		t.Fatal(err)
	}
	f.AddTool(t, "a", "echo a", nil).Path = filepath.ToSlash(rel) // sorts before "look"; does not exist
	writeLock(t, f, time.Now().Add(-time.Second))
	problems := CheckStale(f.LockPath, f.Lock, nil)
	if len(problems) != 2 || !strings.Contains(problems[1].Error(), `mcp server "srv"`) {
		t.Errorf("problems = %v, want tool a's and mcp server srv's", problems)
	}
}
