package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/server/mcpconfig"
)

// TestMCPConfigFlags: the flags land in MCPConfigOptions, under mcp, with
// the global ones.
func TestMCPConfigFlags(t *testing.T) {
	parse := func(args ...string) *MCPConfigOptions {
		t.Helper()
		g, _, _ := testGlobals()
		var got *MCPConfigOptions
		root := &cobra.Command{Use: "toolbox"}
		root.PersistentFlags().StringVarP(&g.File, "file", "f", "", "")
		mcp := &cobra.Command{Use: "mcp", RunE: func(*cobra.Command, []string) error { return errors.New("mcp ran") }}
		mcp.AddCommand(NewCmdMCPConfig(g, func(o *MCPConfigOptions) error { got = o; return nil }))
		root.AddCommand(mcp)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := parse("mcp", "-f", "x.hcl", "config", "--client", "codex", "--workspace", "ws", "--write", "--client-file", "c.toml", "--name", "tb2")
	if got == nil || got.Client != "codex" || got.Workspace != "ws" || !got.Write || got.ClientFile != "c.toml" || got.Name != "tb2" || got.ToolboxFile() != "x.hcl" {
		t.Errorf("options %+v", got)
	}
	if got := parse("-f", "y.hcl", "mcp", "config", "--client", "cursor"); got.Name != "toolbox" || got.Write || got.ToolboxFile() != "y.hcl" {
		t.Errorf("defaults: %+v", got)
	}
}

// configFixture is a toolbox file, its lock and a workspace in a temporary
// directory, one git repository, and options that print for a toolbox
// binary at /opt/bin.
func configFixture(t *testing.T) (*MCPConfigOptions, *strings.Builder, *strings.Builder, string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"toolbox.hcl", "toolbox.lock.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"ws", ".git"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb strings.Builder
	g := &Globals{File: filepath.Join(dir, "toolbox.hcl"), IO: IOStreams{Out: &out, Err: &errb}}
	opts := &MCPConfigOptions{
		Globals: g, Name: "toolbox", Workspace: filepath.Join(dir, "ws"),
		Executable: func() (string, error) { return "/opt/bin/toolbox", nil },
		Home:       func() (string, error) { return filepath.Join(dir, "home"), nil },
		Getenv:     func(string) string { return "" },
		Now:        func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
	return opts, &out, &errb, dir
}

// The printed entry is the client's snippet for the absolute paths; stderr
// says where the client reads it.
func TestMCPConfigPrints(t *testing.T) {
	opts, out, errb, dir := configFixture(t)
	opts.Client = "codex"
	opts.StateDir = "state"
	if err := mcpConfigRun(opts); err != nil {
		t.Fatal(err)
	}
	state, _ := filepath.Abs("state")
	want, _ := mcpconfig.Snippet(mcpconfig.Codex, mcpconfig.Server{Name: "toolbox", Command: "/opt/bin/toolbox",
		Args: []string{"mcp", "-f", filepath.Join(dir, "toolbox.hcl"), "--workspace", filepath.Join(dir, "ws"), "--state-dir", state}})
	if out.String() != string(want) {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if wantErr := "codex reads this from " + filepath.Join(dir, "home", ".codex", "config.toml") + "; --write merges it there\n"; errb.String() != wantErr {
		t.Errorf("stderr %q, want %q", errb, wantErr)
	}
}

// --write merges into the client's file and says where the old one went.
func TestMCPConfigWrites(t *testing.T) {
	opts, out, errb, dir := configFixture(t)
	opts.Client, opts.Write = "claude-code", true
	file := filepath.Join(dir, "ws", ".mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"other": {"command": "x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := mcpConfigRun(opts); err != nil {
		t.Fatal(err)
	}
	backup := file + ".toolbox-backup-20260102T030405Z"
	// The toolbox on PATH is not /opt/bin/toolbox: named absolute, said.
	if want := "wrote server \"toolbox\" to " + file + " (the old file: " + backup + ")\n"; out.Len() != 0 || !strings.HasPrefix(errb.String(), want) ||
		!strings.Contains(errb.String(), "the toolbox on PATH is not /opt/bin/toolbox") {
		t.Errorf("stdout %q, stderr %q; want nothing and %q", out, errb, want)
	}
	data, _ := os.ReadFile(file)
	if !strings.Contains(string(data), `"other"`) || !strings.Contains(string(data), `"command": "/opt/bin/toolbox"`) {
		t.Errorf("merged file:\n%s", data)
	}
}

func TestMCPConfigErrors(t *testing.T) {
	for what, c := range map[string]struct {
		edit func(o *MCPConfigOptions, dir string)
		want string
		use  bool // a usage error
	}{
		"no client":       {func(o *MCPConfigOptions, _ string) { o.Client = "" }, "--client is required: one of claude-code, claude-desktop, cursor, vscode, codex, gemini", true},
		"unknown client":  {func(o *MCPConfigOptions, _ string) { o.Client = "zed" }, `--client: unknown MCP client "zed"`, true},
		"file w/o write":  {func(o *MCPConfigOptions, _ string) { o.ClientFile = "x.json" }, "--client-file names the file --write merges into; add --write", true},
		"no toolbox file": {func(o *MCPConfigOptions, dir string) { o.Globals.File = filepath.Join(dir, "none.hcl") }, "no toolbox file found", false},
		"no workspace":    {func(o *MCPConfigOptions, dir string) { o.Workspace = filepath.Join(dir, "nope") }, "workspace", false},
		"file workspace":  {func(o *MCPConfigOptions, dir string) { o.Workspace = filepath.Join(dir, "toolbox.hcl") }, "is not a directory", false},
		"unreadable file": {func(o *MCPConfigOptions, dir string) { o.Write, o.ClientFile = true, filepath.Join(dir, "bad.json") }, "bad.json:1: invalid character", false},
		"codex, no home": {func(o *MCPConfigOptions, _ string) {
			o.Client, o.Home = "codex", func() (string, error) { return "", errors.New("no") }
		}, "name the file with --client-file", false},
		"bad server name": {func(o *MCPConfigOptions, _ string) { o.Name = "a b" }, `server name "a b"`, false},
		"workspace by env": {func(o *MCPConfigOptions, _ string) {
			o.Workspace, o.Getenv = "", func(string) string { return "/nonexistent-ws" }
		}, `workspace "/nonexistent-ws" ($TOOLBOX_WORKSPACE) does not exist`, false},
	} {
		opts, _, _, dir := configFixture(t)
		opts.Client = "cursor"
		if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		c.edit(opts, dir)
		err := mcpConfigRun(opts)
		var ue *UsageError
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &ue) != c.use {
			t.Errorf("%s: %v, want an error (usage: %v) containing %q", what, err, c.use, c.want)
		}
	}
}

// A workspace left to the current directory is refused as toolbox mcp
// refuses it: the home directory (and above) is never pinned as an explicit
// --workspace; named with --workspace it is honoured.
func TestMCPConfigHomeWorkspace(t *testing.T) {
	opts, out, _, dir := configFixture(t)
	opts.Client = "cursor"
	home := filepath.Join(dir, "ws")
	t.Setenv("HOME", home)
	t.Chdir(home)
	opts.Workspace = ""
	err := mcpConfigRun(opts)
	var we *runspec.WorkspaceError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "(the current directory) holds the home directory "+home) || out.Len() != 0 {
		t.Fatalf("from the home directory: %v, stdout %q; want the workspace refused", err, out)
	}
	opts.Workspace = home
	if err := mcpConfigRun(opts); err != nil || !strings.Contains(out.String(), `"--workspace",`) || !strings.Contains(out.String(), `"${workspaceFolder}"`) {
		t.Fatalf("--workspace ~: %v, stdout %q", err, out)
	}
}

// The note when the toolbox has no lock yet.
func TestMCPConfigNoLock(t *testing.T) {
	opts, _, errb, dir := configFixture(t)
	opts.Client = "gemini"
	if err := os.Remove(filepath.Join(dir, "toolbox.lock.json")); err != nil {
		t.Fatal(err)
	}
	if err := mcpConfigRun(opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "has no lock yet: run `toolbox lock -f "+filepath.Join(dir, "toolbox.hcl")+"`") {
		t.Errorf("stderr %q", errb)
	}
}

// In the toolbox binary, mcp without a subcommand (whatever its flags,
// even one whose value is "config") is handed to toolbox-core, which
// serves; mcp config runs here.
func TestMCPConfigRoutes(t *testing.T) {
	for _, c := range []struct {
		args      []string
		delegated bool
	}{
		{[]string{"mcp"}, true},
		{[]string{"mcp", "--recheck", "5m", "-f", "x.hcl"}, true},
		{[]string{"mcp", "-C", "config"}, true},
		{[]string{"-f", "x.hcl", "mcp", "--dir", "config"}, true},
		{[]string{"mcp", "config", "--client", "nope"}, false},
		{[]string{"-f", "x.hcl", "mcp", "config", "--client", "nope"}, false},
	} {
		g, _, _ := testGlobals()
		delegated := false
		g.Delegate = func() error { delegated = true; return nil }
		root := newToolboxRoot(g)
		root.SetArgs(c.args)
		err := root.Execute()
		if delegated != c.delegated {
			t.Errorf("%v: delegated %v (%v), want %v", c.args, delegated, err, c.delegated)
		}
	}
}
