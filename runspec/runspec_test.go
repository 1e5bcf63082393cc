package runspec

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// plainTool is a v1 tool: no runtime, no sandbox.
func plainTool() *manifest.Tool {
	return &manifest.Tool{
		Kind: "exec", Path: "tools/echo", Protocol: 1,
		Describe: &protocol.Describe{Slug: "echo", Args: []protocol.Arg{}},
		Runtime:  manifest.Runtime{Mechanism: "none"},
		Probe:    manifest.Probe{Status: manifest.StatusOK},
	}
}

// sandboxedTool declares runtime.sandbox.
func sandboxedTool() *manifest.Tool {
	t := plainTool()
	t.Protocol = 2
	t.Describe.Protocol = 2
	t.Describe.Runtime = &protocol.Runtime{Sandbox: &protocol.Sandbox{
		FS: &protocol.FS{Read: []string{"."}}, Net: "none",
	}}
	t.Runtime.Mechanism = "bwrap"
	return t
}

var callerEnv = []string{
	"PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", "TZ=UTC", "TERM=xterm",
	"USER=root", "LOGNAME=root", "SECRET=s3cret", "AGENT_ID=agent-7",
	"EXTRA=extra", "NOEQUALS", "PATH=/opt/bin:/usr/bin:/bin",
}

func mustPrepare(t *testing.T, lockDir string, tool *manifest.Tool, allow []string, p Params) (*sandbox.Spec, sandbox.Command) {
	t.Helper()
	if p.Trust == nil {
		p.Trust = testTrust(t, lockDir)
	}
	spec, cmd, err := Prepare(lockDir, tool, allow, p)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return spec, cmd
}

// testTrust is the trust of a lock in lockDir; the shared tmp it leads to
// is removed at the end.
func testTrust(t testing.TB, lockDir string) *Trust {
	t.Helper()
	abs, err := filepath.Abs(lockDir)
	if err != nil {
		t.Fatal(err)
	}
	tr := &Trust{LockPath: filepath.Join(abs, "toolbox.lock.json")}
	t.Cleanup(func() {
		if dir, err := sandbox.SharedTmpPath(tr.LockPath); err == nil {
			os.RemoveAll(dir)
		}
	})
	return tr
}

func TestPrepareArgv(t *testing.T) {
	multi := plainTool()
	multi.Command = "lines"
	multi.Describe.Commands = []protocol.Command{{Name: "lines"}}
	for _, tc := range []struct {
		name string
		tool *manifest.Tool
		p    Params
		want []string
	}{
		{"run", plainTool(), Params{Verb: "run", Argv: []string{"a", "--n", "1"}}, []string{"run", "a", "--n", "1"}},
		{"describe", plainTool(), Params{Verb: "describe"}, []string{"describe"}},
		{"check", plainTool(), Params{Verb: "check"}, []string{"check"}},
		{"help", plainTool(), Params{Verb: "help"}, []string{"help"}},
		{"multi-command run", multi, Params{Verb: "run", Argv: []string{"f.go"}}, []string{"run", "lines", "f.go"}},
		{"multi-command help", multi, Params{Verb: "help"}, []string{"help", "lines"}},
		{"multi-command describe", multi, Params{Verb: "describe"}, []string{"describe"}},
		{"multi-command check", multi, Params{Verb: "check"}, []string{"check"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cmd := mustPrepare(t, t.TempDir(), tc.tool, nil, tc.p)
			if !reflect.DeepEqual(cmd.Args, tc.want) {
				t.Errorf("Args = %q, want %q", cmd.Args, tc.want)
			}
		})
	}
	for _, verb := range []string{"", "exec", "RUN"} {
		if _, _, err := Prepare(t.TempDir(), plainTool(), nil, Params{Verb: verb}); err == nil || !strings.Contains(err.Error(), "unknown verb") {
			t.Errorf("verb %q: err = %v, want unknown verb", verb, err)
		}
	}
	// Prepare must not alias the caller's Argv.
	argv := make([]string, 1, 8)
	argv[0] = "x"
	_, cmd := mustPrepare(t, t.TempDir(), plainTool(), nil, Params{Verb: "run", Argv: argv})
	cmd.Args[1] = "changed"
	if argv[0] != "x" {
		t.Errorf("Prepare's Args share the caller's Argv")
	}
}

func TestPreparePaths(t *testing.T) {
	lockDir := t.TempDir()
	other := t.TempDir()

	_, cmd := mustPrepare(t, lockDir, plainTool(), nil, Params{Verb: "run"})
	if want := filepath.Join(lockDir, "tools", "echo"); cmd.Path != want {
		t.Errorf("relative: Path = %q, want %q", cmd.Path, want)
	}

	abs := plainTool()
	abs.Path = filepath.ToSlash(other) + "/bin//echo"
	spec, cmd := mustPrepare(t, lockDir, abs, nil, Params{Verb: "run"})
	if want := filepath.Join(other, "bin", "echo"); cmd.Path != want {
		t.Errorf("absolute: Path = %q, want %q", cmd.Path, want)
	}
	if want := filepath.Join(other, "bin"); spec.ToolDir != want {
		t.Errorf("ToolDir = %q, want %q", spec.ToolDir, want)
	}

	// A relative lockDir is made absolute against the working directory.
	t.Chdir(lockDir)
	spec, cmd = mustPrepare(t, ".", plainTool(), nil, Params{Verb: "run"})
	if want := filepath.Join(lockDir, "tools", "echo"); cmd.Path != want || spec.ToolDir != filepath.Dir(want) {
		t.Errorf("relative lockDir: Path = %q, ToolDir = %q, want %q", cmd.Path, spec.ToolDir, want)
	}
	if cmd.Dir != "" {
		t.Errorf("Dir = %q without a rundir, want the caller's (\"\")", cmd.Dir)
	}
}

func TestPrepareSpec(t *testing.T) {
	lockDir := t.TempDir()
	toolDir := filepath.Join(lockDir, "tools")

	spec, _ := mustPrepare(t, lockDir, plainTool(), nil, Params{Verb: "run"})
	want := &sandbox.Spec{Mechanism: sandbox.None, ToolDir: toolDir}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("plain tool: spec = %+v, want %+v", spec, want)
	}

	tool := sandboxedTool()
	tool.Runtime.Mechanism = "landlock"
	tool.Describe.Runtime.Sandbox = &protocol.Sandbox{
		FS: &protocol.FS{
			Read:  []string{".", "../data", "/usr/share//zoneinfo/"},
			Write: []string{"out", "/var/tmp/x/../y"},
		},
		Net: "none", Tmp: "private",
	}
	tool.Runtime.RunAs = &manifest.Identity{User: "nobody", UID: 65534, GID: 65533, Groups: []uint32{1, 2}}
	spec, _ = mustPrepare(t, lockDir, tool, nil, Params{Verb: "check"})
	want = &sandbox.Spec{
		Mechanism:  sandbox.Landlock,
		ToolDir:    toolDir,
		Read:       []string{toolDir, filepath.Join(lockDir, "data"), "/usr/share/zoneinfo"},
		Write:      []string{filepath.Join(toolDir, "out"), "/var/tmp/y"},
		NetNone:    true,
		TmpPrivate: true,
		RunAs:      &sandbox.Identity{UID: 65534, GID: 65533, Groups: []uint32{1, 2}},
	}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("sandboxed tool:\n spec = %+v\n want %+v", spec, want)
	}

	for mech, want := range map[string]sandbox.Mechanism{"": sandbox.None, "none": sandbox.None, "bwrap": sandbox.Bwrap} {
		tool := sandboxedTool()
		tool.Runtime.Mechanism = mech
		spec, _ := mustPrepare(t, lockDir, tool, nil, Params{Verb: "run"})
		if spec.Mechanism != want {
			t.Errorf("mechanism %q: spec.Mechanism = %q, want %q", mech, spec.Mechanism, want)
		}
	}
	for _, mech := range []string{"auto", "chroot"} {
		tool := sandboxedTool()
		tool.Runtime.Mechanism = mech
		if _, _, err := Prepare(lockDir, tool, nil, Params{Verb: "run", Trust: testTrust(t, lockDir)}); err == nil || !strings.Contains(err.Error(), "run toolbox lock") {
			t.Errorf("mechanism %q: err = %v, want a refusal", mech, err)
		}
	}
}

func TestPrepareStdin(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
		nil  bool
	}{
		{nil, "", true},
		{[]byte{}, "", false},
		{[]byte("a\nb\n"), "a\nb\n", false},
	} {
		_, cmd := mustPrepare(t, t.TempDir(), plainTool(), nil, Params{Verb: "run", Stdin: tc.in})
		if (cmd.Stdin == nil) != tc.nil {
			t.Errorf("Stdin for %q: nil = %v, want %v", tc.in, cmd.Stdin == nil, tc.nil)
			continue
		}
		if cmd.Stdin != nil {
			got, _ := io.ReadAll(cmd.Stdin)
			if string(got) != tc.want {
				t.Errorf("Stdin = %q, want %q", got, tc.want)
			}
		}
	}
}

func TestPrepareRundir(t *testing.T) {
	lockDir := t.TempDir()

	tool := plainTool()
	tool.Runtime.Rundir = "state/run/echo"
	_, cmd := mustPrepare(t, lockDir, tool, nil, Params{Verb: "run"})
	want := filepath.Join(lockDir, "state", "run", "echo")
	if cmd.Dir != want {
		t.Errorf("Dir = %q, want %q", cmd.Dir, want)
	}
	info, err := os.Stat(want)
	if err != nil || !info.IsDir() || info.Mode().Perm()&^0o755 != 0 {
		t.Fatalf("rundir not created as a 0755 directory: %v %v", info, err)
	}

	// Existing, absolute: used as it is.
	abs := t.TempDir()
	if err := os.Chmod(abs, 0o700); err != nil {
		t.Fatal(err)
	}
	tool.Runtime.Rundir = filepath.ToSlash(abs)
	_, cmd = mustPrepare(t, lockDir, tool, nil, Params{Verb: "run"})
	if cmd.Dir != abs {
		t.Errorf("Dir = %q, want %q", cmd.Dir, abs)
	}
	if info, _ := os.Stat(abs); info.Mode().Perm() != 0o700 {
		t.Errorf("existing rundir mode changed to %v", info.Mode().Perm())
	}

	// A file in the way.
	if err := os.WriteFile(filepath.Join(lockDir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tool.Runtime.Rundir = "afile"
	if _, _, err := Prepare(lockDir, tool, nil, Params{Verb: "run"}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("err = %v, want not a directory", err)
	}
	tool.Runtime.Rundir = "afile/sub"
	if _, _, err := Prepare(lockDir, tool, nil, Params{Verb: "run"}); err == nil {
		t.Errorf("rundir under a file was accepted")
	}
}

func TestPrepareRundirRunAs(t *testing.T) {
	testenv.NeedRoot(t)
	lockDir := t.TempDir()
	for _, d := range []string{"tools", "run"} {
		if err := os.Mkdir(filepath.Join(lockDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tool := sandboxedTool()
	tool.Describe.Runtime.Sandbox.FS.Write = []string{"../run"}
	tool.Runtime.Rundir = "run/nobody"
	tool.Runtime.RunAs = &manifest.Identity{User: "nobody", UID: 65534, GID: 65534}
	mustPrepare(t, lockDir, tool, nil, Params{Verb: "run"})
	for dir, uid := range map[string]uint32{"run/nobody": 65534, "run": 0} {
		info, err := os.Stat(filepath.Join(lockDir, dir))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Sys().(*syscall.Stat_t).Uid; got != uid {
			t.Errorf("%s owned by uid %d, want %d", dir, got, uid)
		}
	}
}

// envOf runs Prepare and returns the environment as a map, checking that it
// is sorted.
func envOf(t *testing.T, lockDir string, tool *manifest.Tool, allow []string, p Params) map[string]string {
	t.Helper()
	if p.Verb == "" {
		p.Verb = "run"
	}
	_, cmd := mustPrepare(t, lockDir, tool, allow, p)
	if !slices.IsSorted(cmd.Env) {
		t.Errorf("Env is not sorted: %q", cmd.Env)
	}
	m := map[string]string{}
	for _, kv := range cmd.Env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := m[k]; dup {
			t.Errorf("Env has %s twice", k)
		}
		m[k] = v
	}
	if p.Verb == VerbRun {
		// Every run has the agent ids (TestPrepareAgentIDs checks their
		// values); the other tests compare the rest.
		for _, k := range []string{AgentSessionID, AgentConversationID, AgentTurnID} {
			if m[k] == "" {
				t.Errorf("a run's Env lacks %s", k)
			}
			delete(m, k)
		}
	}
	return m
}

// TestPrepareAgentIDs: a run always has AGENT_SESSION_ID,
// AGENT_CONVERSATION_ID and AGENT_TURN_ID (as agents-exe sets them), the
// caller's values winning, sandboxed or not.
func TestPrepareAgentIDs(t *testing.T) {
	lockDir := t.TempDir()
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	env := func(tool *manifest.Tool, p Params) map[string]string {
		p.Verb = VerbRun
		_, cmd := mustPrepare(t, lockDir, tool, nil, p)
		m := map[string]string{}
		for _, kv := range cmd.Env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		return m
	}
	for _, tool := range []*manifest.Tool{plainTool(), sandboxedTool()} {
		// From the toolbox session; a fresh turn per call.
		a, b := env(tool, Params{Session: "mcp-1"}), env(tool, Params{Session: "mcp-1"})
		if a[AgentSessionID] != "mcp-1" || a[AgentConversationID] != "mcp-1" {
			t.Errorf("session ids = %q, %q; want the toolbox session", a[AgentSessionID], a[AgentConversationID])
		}
		if !uuid.MatchString(a[AgentTurnID]) || a[AgentTurnID] == b[AgentTurnID] {
			t.Errorf("turn ids %q, %q: want a fresh UUID per call", a[AgentTurnID], b[AgentTurnID])
		}
		// No session at all: generated, the conversation following it.
		c := env(tool, Params{})
		if !uuid.MatchString(c[AgentSessionID]) || c[AgentConversationID] != c[AgentSessionID] {
			t.Errorf("without a session: %q, %q", c[AgentSessionID], c[AgentConversationID])
		}
		// The caller's win.
		d := env(tool, Params{Session: "mcp-1", CallerEnv: []string{"AGENT_SESSION_ID=s", "AGENT_CONVERSATION_ID=c", "AGENT_TURN_ID=t"}})
		if d[AgentSessionID] != "s" || d[AgentConversationID] != "c" || d[AgentTurnID] != "t" {
			t.Errorf("the caller's ids were replaced: %v", d)
		}
	}
	// Only runs: describe, check and help get none.
	_, cmd := mustPrepare(t, lockDir, plainTool(), nil, Params{Verb: VerbCheck, Session: "x"})
	for _, kv := range cmd.Env {
		if strings.HasPrefix(kv, "AGENT_") {
			t.Errorf("check got %s", kv)
		}
	}
}

func TestPrepareEnvironmentBase(t *testing.T) {
	lockDir := t.TempDir()
	toolDir := filepath.Join(lockDir, "tools")
	if err := os.MkdirAll(filepath.Join(lockDir, "tools", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	withRundir := sandboxedTool()
	withRundir.Runtime.Rundir = "tools/run"

	for _, tc := range []struct {
		name  string
		tool  *manifest.Tool
		allow []string
		want  map[string]string
	}{
		{"unsandboxed keeps the caller's environment", plainTool(), nil, map[string]string{
			"PATH": "/opt/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "TZ": "UTC", "TERM": "xterm",
			"USER": "root", "LOGNAME": "root", "SECRET": "s3cret", "AGENT_ID": "agent-7", "EXTRA": "extra",
			"TOOLBOX_SESSION": "sess-1",
		}},
		{"unsandboxed with env_allowlist", plainTool(), []string{"PATH", "EXTRA", "MISSING"}, map[string]string{
			"PATH": "/opt/bin:/usr/bin:/bin", "EXTRA": "extra", "AGENT_ID": "agent-7", "TOOLBOX_SESSION": "sess-1",
		}},
		{"unsandboxed with an empty env_allowlist", plainTool(), []string{}, map[string]string{
			"AGENT_ID": "agent-7", "TOOLBOX_SESSION": "sess-1",
		}},
		{"sandboxed gets the default allowlist and its own HOME", sandboxedTool(), nil, map[string]string{
			"PATH": "/opt/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC", "TERM": "xterm",
			"USER": "root", "LOGNAME": "root", "HOME": toolDir, "AGENT_ID": "agent-7", "TOOLBOX_SESSION": "sess-1",
		}},
		{"sandboxed HOME is its rundir", withRundir, nil, map[string]string{
			"PATH": "/opt/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC", "TERM": "xterm",
			"USER": "root", "LOGNAME": "root", "HOME": filepath.Join(lockDir, "tools", "run"), "AGENT_ID": "agent-7",
			"TOOLBOX_SESSION": "sess-1",
		}},
		{"sandboxed with env_allowlist, HOME still its own", sandboxedTool(), []string{"EXTRA", "HOME"}, map[string]string{
			"EXTRA": "extra", "HOME": toolDir, "AGENT_ID": "agent-7", "TOOLBOX_SESSION": "sess-1",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := envOf(t, lockDir, tc.tool, tc.allow, Params{CallerEnv: callerEnv, Session: "sess-1"})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestPrepareEnvironmentLayers(t *testing.T) {
	lockDir := t.TempDir()
	writeFiles(t, filepath.Join(lockDir, "env", "echo"), map[string]string{
		"FROM_ENVDIR": "envdir\n",
		"OVERRIDDEN":  "envdir",
		"BY_ARG":      "envdir",
		"AGENT_ID":    "envdir",
		"LANG":        "", // unsets the caller's LANG
		"SECRET":      "",
	})
	decl := map[string]string{"OVERRIDDEN": "declared", "BY_ARG": "declared", "DECLARED": "declared"}
	args := []string{"BY_ARG=arg", "MODE=a=b"}

	sandboxed := sandboxedTool()
	sandboxed.Runtime.Envdir = "env/echo"
	sandboxed.Describe.Runtime.Environment = decl
	got := envOf(t, lockDir, sandboxed, nil, Params{CallerEnv: callerEnv, ArgEnv: args, Session: "s"})
	want := map[string]string{
		"PATH": "/opt/bin:/usr/bin:/bin", "TZ": "UTC", "TERM": "xterm", "USER": "root", "LOGNAME": "root",
		"HOME":        filepath.Join(lockDir, "tools"),
		"FROM_ENVDIR": "envdir", "OVERRIDDEN": "declared", "DECLARED": "declared", "BY_ARG": "arg", "MODE": "a=b",
		"TOOLBOX_SESSION": "s",
		"AGENT_ID":        "agent-7", // the caller's AGENT_* come last for a filtered tool
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sandboxed env:\n got %v\nwant %v", got, want)
	}

	plain := plainTool()
	plain.Runtime.Envdir = filepath.ToSlash(filepath.Join(lockDir, "env", "echo")) // absolute
	plain.Describe.Runtime = &protocol.Runtime{Environment: decl}
	got = envOf(t, lockDir, plain, nil, Params{CallerEnv: append(callerEnv, "TOOLBOX_SESSION=outer"), ArgEnv: args})
	want = map[string]string{
		"PATH": "/opt/bin:/usr/bin:/bin", "HOME": "/root", "TZ": "UTC", "TERM": "xterm", "USER": "root",
		"LOGNAME": "root", "EXTRA": "extra",
		"FROM_ENVDIR": "envdir", "OVERRIDDEN": "declared", "DECLARED": "declared", "BY_ARG": "arg", "MODE": "a=b",
		"AGENT_ID":        "envdir", // an unfiltered tool's envdir wins over the caller
		"TOOLBOX_SESSION": "outer",  // no session given: the caller's passes as any variable
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plain env:\n got %v\nwant %v", got, want)
	}
}

func TestPrepareEnvironmentErrors(t *testing.T) {
	lockDir := t.TempDir()
	tool := plainTool()
	tool.Runtime.Envdir = "env/missing"
	_, _, err := Prepare(lockDir, tool, nil, Params{Verb: "run"})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(lockDir, "env", "missing")) || !strings.Contains(err.Error(), "create it") {
		t.Errorf("missing envdir: err = %v, want the path and the fix", err)
	}

	writeFiles(t, filepath.Join(lockDir, "env", "bad"), map[string]string{"A=B": "x"})
	tool.Runtime.Envdir = "env/bad"
	if _, _, err := Prepare(lockDir, tool, nil, Params{Verb: "run"}); err == nil || !strings.Contains(err.Error(), "A=B") {
		t.Errorf("bad envdir name: err = %v", err)
	}

	for _, bad := range []string{"NOEQUALS", "=value"} {
		_, _, err := Prepare(lockDir, plainTool(), nil, Params{Verb: "run", ArgEnv: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), "NAME=value") {
			t.Errorf("ArgEnv %q: err = %v", bad, err)
		}
	}

	if _, _, err := Prepare(lockDir, nil, nil, Params{Verb: "run"}); err == nil {
		t.Errorf("nil tool accepted")
	}
}

// A tool without a describe document (a failed probe) still prepares as an
// unsandboxed tool: describe and check are what the compiler runs first.
func TestPrepareWithoutDescribe(t *testing.T) {
	tool := plainTool()
	tool.Describe = nil
	got := envOf(t, t.TempDir(), tool, nil, Params{Verb: "describe", CallerEnv: []string{"A=1"}})
	if !reflect.DeepEqual(got, map[string]string{"A": "1"}) {
		t.Errorf("env = %v", got)
	}
}

func BenchmarkPrepare(b *testing.B) {
	lockDir := b.TempDir()
	dir := filepath.Join(lockDir, "env", "echo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"API_KEY", "REGION", "MODE"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("value\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(lockDir, "tools", "run"), 0o755); err != nil {
		b.Fatal(err)
	}
	tool := sandboxedTool()
	tool.Runtime.Envdir = "env/echo"
	tool.Runtime.Rundir = "tools/run"
	tool.Describe.Runtime.Environment = map[string]string{"A": "1", "B": "2"}
	p := Params{
		Verb: "run", Argv: []string{"--path", "README.md"}, ArgEnv: []string{"LIMIT=10"},
		CallerEnv: append(os.Environ(), callerEnv...), Session: "bench", Stdin: []byte("x\n"),
		Trust: testTrust(b, lockDir),
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Prepare(lockDir, tool, nil, p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPrepareNamesTheTool: an error preparing a tool names it as the lock
// and the operator do (Params.Tool), not by its binary's path; without a
// name, it says the path is the tool's.
func TestPrepareNamesTheTool(t *testing.T) {
	tool := &manifest.Tool{Path: "/somewhere/bin/count_lines", Runtime: manifest.Runtime{Mechanism: "none"}}
	_, _, err := Prepare("/lock", tool, nil, Params{Tool: "count_lines", Verb: "frobnicate"})
	if err == nil || !strings.HasPrefix(err.Error(), `preparing tool "count_lines": `) {
		t.Errorf("named: %v", err)
	}
	_, _, err = Prepare("/lock", tool, nil, Params{Verb: "frobnicate"})
	if err == nil || !strings.HasPrefix(err.Error(), `preparing the tool at "/somewhere/bin/count_lines": `) {
		t.Errorf("unnamed: %v", err)
	}
}
