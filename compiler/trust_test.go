package compiler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/mcpfake"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// TestMain lets the test binary serve as the landlock helper, which
// re-executes it.
func TestMain(m *testing.M) {
	if os.Getenv("COMPILER_HELPER") == "mcpfake" {
		os.Exit(mcpfake.Main())
	}
	sandbox.Init()
	os.Exit(testenv.RunWithTmp(m))
}

// toolboxDir writes toolbox.hcl and one tool whose describe document is
// describe (a JSON object), outside /tmp.
func toolboxDir(t *testing.T, sandboxSetting, describe string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "compiler-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("toolbox.hcl", "sandbox = \""+sandboxSetting+"\"\ntool \"t\" { path = \"tools/t\" }\n", 0o644)
	write("tools/t", "#!/bin/sh\necho '"+describe+"'\n", 0o755)
	write("data/real/f", "x\n", 0o644)
	if err := os.Symlink("real", filepath.Join(dir, "data", "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func compileDir(t *testing.T, dir, mech string) *Result {
	t.Helper()
	cfg, err := Load(filepath.Join(dir, "toolbox.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return Compile(context.Background(), cfg, Options{Sandbox: mech, StateDir: filepath.Join(dir, "state")})
}

// The lock records what every declared path resolved to (relative to the
// lock when inside its directory), and pins the bubblewrap a bwrap tool
// runs; a run opens exactly that (DESIGN.md §6).
func TestLockRecordsResolvedPathsAndBwrap(t *testing.T) {
	s := sandbox.Detect()
	testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason)
	dir := toolboxDir(t, "auto", `{"protocol":2,"slug":"t","description":"t","args":[],"runtime":{"sandbox":{"net":"none","fs":{"read":["../data/link","/etc/hostname"]}}}}`)
	res := compileDir(t, dir, "")
	if len(res.Errs) > 0 {
		t.Fatal(res.Errs)
	}
	rt := res.Lock.Tools["t"].Runtime
	real, _ := filepath.EvalSymlinks("/etc/hostname")
	if rt.Paths["../data/link"] != "data/real" || rt.Paths["/etc/hostname"] != real {
		t.Fatalf("paths %v", rt.Paths)
	}
	if b := res.Lock.Bwrap; b == nil || b.Path != s.BwrapPin.Path || b.SHA256 != s.BwrapPin.SHA256 {
		t.Fatalf("bwrap pin %+v, want %+v", b, s.BwrapPin)
	}
	// No bwrap tool, no pin.
	dir = toolboxDir(t, "landlock", `{"protocol":2,"slug":"t","description":"t","args":[],"runtime":{"sandbox":{}}}`)
	if res := compileDir(t, dir, ""); len(res.Errs) > 0 || res.Lock.Bwrap != nil {
		t.Fatalf("landlock toolbox: %v, pin %+v", res.Errs, res.Lock)
	}
}

// A landlock tool whose write grant covers the toolbox file, the lock or
// a binary is refused at lock time, naming the tool, the grant and the
// file; bwrap masks them, so the same tool locks under bwrap. A grant
// reaching the state dir is refused under landlock too.
func TestLockRefusesGrantOverProtected(t *testing.T) {
	s := sandbox.Detect()
	testenv.Need(t, s.Landlock, "landlock", s.LandlockReason)
	dir := toolboxDir(t, "landlock", `{"protocol":2,"slug":"t","description":"t","args":[],"runtime":{"sandbox":{"fs":{"write":[".."]}}}}`)
	res := compileDir(t, dir, "")
	var r *sandbox.RefusalError
	if len(res.Errs) != 1 || !errors.As(res.Errs[0], &r) || r.Field != sandbox.FieldWrite {
		t.Fatalf("errors %v, want a refusal of %s", res.Errs, sandbox.FieldWrite)
	}
	msg := res.Errs[0].Error()
	for _, want := range []string{`tool "t"`, `writable path "` + dir + `"`, filepath.Join(dir, "toolbox.hcl"), "landlock cannot mask"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if res.Tools["t"].Status != "skipped" {
		t.Errorf("status %q, want skipped", res.Tools["t"].Status)
	}
	if s.Bwrap {
		// bwrap masks protected files through their directories: the
		// grant directly holding the toolbox file is refused, and one
		// above it locks.
		res := compileDir(t, dir, "bwrap")
		if len(res.Errs) != 1 || !strings.Contains(res.Errs[0].Error(), "directly holds") {
			t.Fatalf("bwrap, a grant directly holding the toolbox file: %v", res.Errs)
		}
		up := toolboxDir(t, "bwrap", `{"protocol":2,"slug":"t","description":"t","args":[],"runtime":{"sandbox":{"fs":{"write":["../.."]}}}}`)
		if res := compileDir(t, up, "bwrap"); len(res.Errs) > 0 {
			t.Fatalf("bwrap masks the protected paths, yet: %v", res.Errs)
		}
	}
	// The state dir: even a read grant covering it is refused by landlock.
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir2 := toolboxDir(t, "landlock", `{"protocol":2,"slug":"t","description":"t","args":[],"runtime":{"sandbox":{"fs":{"read":[".."]}}}}`)
	if err := os.Mkdir(filepath.Join(dir2, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	res = compileDir(t, dir2, "")
	if len(res.Errs) != 1 || !strings.Contains(res.Errs[0].Error(), "state directory") {
		t.Fatalf("read grant over the state dir: %v", res.Errs)
	}
}

// The compiler refuses at lock time with the list every run enforces: the
// trust it builds from the toolbox file protects and hides what
// runspec.NewTrust makes of the lock it writes.
func TestLockTrustIsTheRunsTrust(t *testing.T) {
	dir := toolboxDir(t, "none", `{"protocol":2,"slug":"t","description":"t","args":[]}`)
	cfg, err := Load(filepath.Join(dir, "toolbox.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.EnvdirRoot = "env"
	state := filepath.Join(dir, "state")
	res := Compile(context.Background(), cfg, Options{StateDir: state})
	if len(res.Errs) > 0 {
		t.Fatal(res.Errs)
	}
	lockPath := filepath.Join(dir, "toolbox.lock.json")
	got, want := lockTrust(cfg, "none", state), runspec.NewTrust(lockPath, res.Lock, state)
	if !slices.Equal(got.Protected, want.Protected) || !slices.Equal(got.Hidden, want.Hidden) || got.LockPath != want.LockPath {
		t.Errorf("at lock time:\n  protected %q\n  hidden %q\nat run time:\n  protected %q\n  hidden %q", got.Protected, got.Hidden, want.Protected, want.Hidden)
	}
	if !slices.Contains(got.Protected, filepath.Join(dir, "tools", "t")) || !slices.Contains(got.Hidden, filepath.Join(dir, "env")) {
		t.Errorf("the tool's binary or the envdir root is missing: %+v", got)
	}
}
