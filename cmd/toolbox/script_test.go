package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/cmd/internal/corecmd"
	"github.com/toolbox-dev/toolbox/internal/mcpfake"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// TestMain registers the test binary as `toolbox` and `toolbox-core`, so
// every script drives the real programs (the hand-over from one to the
// other, and the hidden sandbox helper) as subprocesses, and as
// `mcpfake`, an MCP server for the mcp_server scripts.
func TestMain(m *testing.M) {
	// The test binary is also the landlock helper when the conditions
	// below probe the sandbox (sandbox.Detect re-executes it).
	sandbox.Init()
	testscript.Main(removeBuilt{m}, map[string]func(){
		"toolbox":      func() { os.Exit(cli.Main()) },
		"toolbox-core": func() { os.Exit(corecmd.Main()) },
		"jsonedit":     func() { os.Exit(jsonEdit()) },
		// A small MCP server (official Go SDK) whose tools come from a
		// JSON file; flags make it misbehave (internal/mcpfake).
		"mcpfake": func() { os.Exit(mcpfake.Main()) },
	})
}

// TestScripts runs testdata/script/*.txtar. Each script gets $REPO (the
// repository root) and a copy of toolboxes/default, its plugins built,
// under $WORK/toolboxes/default, whose tools read $WORK as their repository.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The default toolbox's plugins are built, not committed: build them
	// once into a copy of toolboxes/default that every script copies.
	defaultTB := filepath.Join(t.TempDir(), "default")
	if out, err := exec.Command("cp", "-a", filepath.Join(repo, "toolboxes", "default"), defaultTB).CombinedOutput(); err != nil {
		t.Fatalf("copying the default toolbox: %v\n%s", err, out)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(defaultTB, "plugins")+"/", "./plugins/examples/...")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example plugins: %v\n%s", err, out)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join(repo, "testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", repo)
			// TMPDIR outside $WORK, where toolbox keeps its shared tmp
			// root: tools granted $WORK would otherwise cover it (bwrap
			// hides it, landlock refuses them). A script wanting that sets
			// TMPDIR itself.
			tmp := env.WorkDir + "-tmp"
			if err := os.Mkdir(tmp, 0o755); err != nil {
				return err
			}
			env.Setenv("TMPDIR", tmp)
			// As root toolbox mounts a tmpfs on the toolbox's shared tmp
			// ($TMPDIR/toolbox-0/...): detach it before testscript
			// removes $WORK (it runs Defer first).
			env.Defer(func() {
				for _, d := range []string{env.WorkDir, tmp} {
					if err := testenv.DetachMounts(d); err != nil {
						env.T().Log(err)
					}
				}
				os.RemoveAll(tmp)
			})
			env.Setenv("MCPFS", mcpfsDir()) // [mcpfs] installs it there
			dst := filepath.Join(env.WorkDir, "toolboxes")
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			return exec.Command("cp", "-a", defaultTB, dst).Run()
		},
		Condition: scriptCondition,
		Cmds:      scriptCmds,
	})
}
