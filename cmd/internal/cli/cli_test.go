package cli

import (
	"bytes"
	"errors"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func testGlobals() (*Globals, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &Globals{IO: IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb}}, &out, &errb
}

// TestRunFlags checks that run's flags land in RunOptions.
func TestRunFlags(t *testing.T) {
	g, _, _ := testGlobals()
	var got *RunOptions
	cmd := NewCmdRun(g, func(o *RunOptions) error { got = o; return nil })
	root := &cobra.Command{Use: "toolbox"}
	root.PersistentFlags().StringVarP(&g.File, "file", "f", "", "")
	root.AddCommand(cmd)
	root.SetArgs([]string{"run", "-f", "x.hcl", "search", "--args", `{"a":1}`, "--backend", "search=grep", "--backend", "read=sh", "--timeout", "3s", "--json", "--session", "s1"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Name != "search" || got.Args != `{"a":1}` || got.Timeout != 3*time.Second || !got.JSON || got.Session != "s1" || got.ToolboxFile() != "x.hcl" {
		t.Errorf("options: %+v", got)
	}
	if strings.Join(got.Backends, ",") != "search=grep,read=sh" {
		t.Errorf("backends: %q", got.Backends)
	}
}

// TestRunUsageErrors: both --args and --args-file, a bad --backend and a
// missing NAME are usage errors (exit 2).
func TestRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "t", "--args", "{}", "--args-file", "f"},
		{"run"},
		{"run", "t", "--timeout", "-1s"},
		{"run", "t", "--keep", "0"},
	} {
		g, _, errb := testGlobals()
		root := NewRoot(g)
		root.SetArgs(args)
		if code := Execute(root, g.IO); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, ExitUsage, errb)
		}
		if !strings.Contains(errb.String(), "Run 'toolbox run --help' for usage.") {
			t.Errorf("%q: no usage hint in %q", args, errb)
		}
	}
	if _, err := parseBackends([]string{"search"}); !errors.As(err, new(*UsageError)) {
		t.Errorf("parseBackends(search) = %v, want a usage error", err)
	}
}

// TestListFlags checks list and schema parsing.
func TestListFlags(t *testing.T) {
	g, _, _ := testGlobals()
	var got *ListOptions
	cmd := NewCmdList(g, func(o *ListOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.JSON {
		t.Error("--json not set")
	}
	called := false
	s := NewCmdSchema(g, func(*SchemaOptions) error { called = true; return nil })
	s.SetArgs([]string{"extra"})
	if err := s.Execute(); err == nil || called {
		t.Errorf("schema with an argument: err %v, called %v; want a usage error", err, called)
	}
}

// TestExecuteCodes: a CodeError's code is the exit code and prints no
// usage hint; an empty message prints nothing.
func TestExecuteCodes(t *testing.T) {
	g, _, errb := testGlobals()
	root := &cobra.Command{Use: "toolbox", SilenceErrors: true, SilenceUsage: true,
		RunE: func(*cobra.Command, []string) error { return WithCode(42, nil) }}
	root.SetArgs(nil)
	if code := Execute(root, g.IO); code != 42 || errb.Len() != 0 {
		t.Errorf("exit %d, stderr %q; want 42 and nothing", code, errb)
	}
}

// TestHelpTexts walks the command tree: every command has a short help.
func TestHelpTexts(t *testing.T) {
	g, _, _ := testGlobals()
	root := NewRoot(g)
	for _, c := range CoreCommands {
		root.AddCommand(DelegatedCmd(g, c.Use, c.Short))
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" {
			t.Errorf("%s has no short help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestFinishedCode: processes wait exits as a shell's wait does.
func TestFinishedCode(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, c := range []struct {
		st   supervisor.Status
		want int
	}{
		{supervisor.Status{Handle: supervisor.Handle{Status: supervisor.StateExited}, ExitCode: code(0)}, 0},
		{supervisor.Status{Handle: supervisor.Handle{Status: supervisor.StateFailed}, ExitCode: code(4)}, 4},
		{supervisor.Status{Handle: supervisor.Handle{Status: supervisor.StateStopped}, ExitCode: code(143)}, 143},
		{supervisor.Status{Handle: supervisor.Handle{Status: supervisor.StateTimedOut}, ExitCode: code(137)}, ExitTimeout},
		{supervisor.Status{Handle: supervisor.Handle{Status: supervisor.StateLost}}, ExitError},
	} {
		if got := finishedCode(c.st); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.st.Status, got, c.want)
		}
	}
}
