package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// --workspace lands in the options of run, start and processes run, and
// ChosenWorkspace applies the precedence: the flag, else
// $TOOLBOX_WORKSPACE, each made absolute.
func TestWorkspaceFlag(t *testing.T) {
	t.Setenv(runspec.WorkspaceEnv, "from-env")
	for _, path := range [][]string{{"run"}, {"start"}, {"processes", "run"}} {
		g, _, _ := testGlobals()
		cmd, _, err := NewRoot(g).Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags([]string{"--workspace", "proj"}); err != nil {
			t.Fatalf("%s: %v", cmd.CommandPath(), err)
		}
		got, err := g.ChosenWorkspace()
		if abs, _ := filepath.Abs("proj"); err != nil || got.Dir != abs || got.From != runspec.FromFlag {
			t.Errorf("%s: ChosenWorkspace = %+v, %v", cmd.CommandPath(), got, err)
		}
	}
	g, _, _ := testGlobals()
	got, err := g.ChosenWorkspace()
	if abs, _ := filepath.Abs("from-env"); err != nil || got.Dir != abs || got.From != runspec.FromEnv {
		t.Errorf("from the environment: %+v, %v", got, err)
	}
	if got, err := g.WorkspaceIn([]string{runspec.WorkspaceEnv + "=/a", runspec.WorkspaceEnv + "=/b"}); err != nil || got.Dir != "/b" {
		t.Errorf("WorkspaceIn: %+v, %v", got, err)
	}
}

// start sends the client's choice to the daemon, absolute, with where it
// came from; without one it sends none (the daemon's own applies).
func TestStartSendsWorkspace(t *testing.T) {
	for _, c := range []struct {
		flag, env string
		want      string
		from      string
	}{
		{flag: "/p", want: "/p", from: string(runspec.FromFlag)},
		{env: "/e", want: "/e", from: string(runspec.FromEnv)},
		{},
	} {
		g, _, _ := testGlobals()
		g.Workspace = c.flag
		fake := &fakeCaller{}
		opts := &StartOptions{DaemonOptions: DaemonOptions{Globals: g, Dial: func() (Caller, error) { return fake, nil },
			Getenv: func(k string) string {
				if k == runspec.WorkspaceEnv {
					return c.env
				}
				return ""
			}}, Name: "t"}
		opts.Environ = func() []string { return nil }
		_ = startRun(context.Background(), opts)
		if len(fake.reqs) != 1 || fake.reqs[0].Workspace != c.want || fake.reqs[0].WorkspaceFrom != c.from {
			t.Errorf("flag %q env %q: sent %+v", c.flag, c.env, fake.reqs)
		}
	}
}

// fakeCaller records the requests and answers nothing.
type fakeCaller struct{ reqs []wire.Request }

func (f *fakeCaller) Call(_ context.Context, req wire.Request, _ any) error {
	f.reqs = append(f.reqs, req)
	return nil
}

// --workspace's help says what applies without it: for run, the toolbox
// file's workspace, else the current directory; for what the daemon
// carries out, the daemon's workspace.
func TestWorkspaceFlagHelp(t *testing.T) {
	for path, want := range map[string]string{"run": "else the current directory", "start": "else the daemon's workspace", "processes run": "else the daemon's workspace"} {
		g, _, _ := testGlobals()
		cmd, _, err := NewRoot(g).Find(strings.Fields(path))
		if err != nil {
			t.Fatal(err)
		}
		if f := cmd.Flags().Lookup("workspace"); f == nil || !strings.Contains(f.Usage, want) {
			t.Errorf("%s --workspace help lacks %q", path, want)
		}
	}
}
