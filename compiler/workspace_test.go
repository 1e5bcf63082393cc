package compiler

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// A tool naming the workspace locks without any project: its workspace
// paths get no lock-time resolution and its rundir stays the token, so the
// lock is the same whatever directory it was made from (lock once, run on
// any project). Its check runs on a private empty workspace holding the
// declared directories.
func TestLockWorkspaceTool(t *testing.T) {
	s := sandbox.Detect()
	testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason)
	dir := toolboxDir(t, "auto", `{"protocol":2,"slug":"t","description":"t","args":[],"runtime":{"rundir":"{workspace}/./src","sandbox":{"net":"none","fs":{"read":["{workspace}","../data/link"],"write":["{workspace}/out"]}}}}`)
	var locks [][]byte
	for _, cwd := range []string{dir, t.TempDir()} {
		t.Chdir(cwd)
		res := compileDir(t, dir, "")
		if len(res.Errs) > 0 {
			t.Fatal(res.Errs)
		}
		rt := res.Lock.Tools["t"].Runtime
		if len(rt.Paths) != 1 || rt.Paths["../data/link"] != "data/real" || rt.Rundir != "{workspace}/src" {
			t.Fatalf("runtime %+v: want only ../data/link resolved and the rundir as a token", rt)
		}
		b, err := manifest.Marshal(res.Lock)
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, b)
	}
	if string(locks[0]) != string(locks[1]) {
		t.Fatalf("the lock depends on the directory it was made from:\n%s\n%s", locks[0], locks[1])
	}
}

// check --probe --workspace probes on the operator's project; one that
// cannot be a workspace is the compile's error, not a tool's.
func TestProbeWorkspace(t *testing.T) {
	dir := toolboxDir(t, "none", `{"protocol":2,"slug":"t","description":"t","args":[],"runtime":{"rundir":"{workspace}"}}`)
	cfg, err := Load(filepath.Join(dir, "toolbox.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	res := Compile(context.Background(), cfg, Options{Workspace: runspec.Workspace{Dir: "/", From: runspec.FromFlag}})
	var we *runspec.WorkspaceError
	if len(res.Errs) != 1 || !errors.As(res.Errs[0], &we) {
		t.Fatalf("errors %v, want the *WorkspaceError", res.Errs)
	}
	res = Compile(context.Background(), cfg, Options{Workspace: runspec.Workspace{Dir: t.TempDir(), From: runspec.FromFlag}})
	if len(res.Errs) > 0 {
		t.Fatal(res.Errs)
	}
}
