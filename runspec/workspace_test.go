package runspec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// workspaceTool declares the workspace readable, {workspace}/out writable
// and {workspace}/src its rundir.
func workspaceTool() *manifest.Tool {
	t := sandboxedTool()
	t.Describe.Runtime.Sandbox.FS = &protocol.FS{Read: []string{"{workspace}"}, Write: []string{"{workspace}/out"}}
	t.Describe.Runtime.Rundir = "{workspace}/src"
	t.Runtime.Rundir = "{workspace}/src"
	return t
}

// realDir is a new directory with its symlinks resolved (t.TempDir may
// lie under a link).
func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// lockDirWithTools is a lock's directory holding the tools/ directory of
// plainTool (a sandbox grants the tool's directory).
func lockDirWithTools(t *testing.T) string {
	t.Helper()
	d := realDir(t)
	if err := os.Mkdir(filepath.Join(d, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// A tool's {workspace} paths and rundir become the call's workspace; the
// lock never held it. Each path is its own lock-time resolution, so the
// start opens it without following links.
func TestPrepareWorkspace(t *testing.T) {
	lockDir, ws := lockDirWithTools(t), realDir(t)
	if err := os.Mkdir(filepath.Join(ws, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := testTrust(t, lockDir)
	tr.WithWorkspace(Workspace{Dir: ws, From: FromFlag})
	if tr.Workspace != ws || tr.WorkspaceErr != nil {
		t.Fatalf("WithWorkspace = %q, %v", tr.Workspace, tr.WorkspaceErr)
	}
	caller := append([]string{WorkspaceEnv + "=/somewhere/else"}, callerEnv...)
	spec, cmd := mustPrepare(t, lockDir, workspaceTool(), nil, Params{Verb: VerbRun, CallerEnv: caller, Trust: tr})
	if len(spec.Read) != 1 || spec.Read[0] != ws || len(spec.Write) != 1 || spec.Write[0] != filepath.Join(ws, "out") {
		t.Fatalf("Read %q Write %q, want the workspace and its out", spec.Read, spec.Write)
	}
	if spec.Resolved[ws] != ws || spec.Resolved[filepath.Join(ws, "out")] != filepath.Join(ws, "out") {
		t.Fatalf("Resolved = %v", spec.Resolved)
	}
	if cmd.Dir != filepath.Join(ws, "src") {
		t.Fatalf("Dir = %q", cmd.Dir)
	}
	if st, err := os.Stat(cmd.Dir); err != nil || !st.IsDir() {
		t.Fatalf("rundir not created: %v", err)
	}
	if got := envValue(cmd.Env, WorkspaceEnv); got != ws {
		t.Fatalf("%s = %q, want %q (the call's, not the caller's)", WorkspaceEnv, got, ws)
	}

	// A tool that names no workspace still learns it; a call without a
	// usable one passes none, not the caller's.
	_, cmd = mustPrepare(t, lockDir, plainTool(), nil, Params{Verb: VerbRun, CallerEnv: caller, Trust: tr})
	if got := envValue(cmd.Env, WorkspaceEnv); got != ws {
		t.Fatalf("plain tool: %s = %q", WorkspaceEnv, got)
	}
	none := testTrust(t, lockDir)
	_, cmd = mustPrepare(t, lockDir, plainTool(), nil, Params{Verb: VerbRun, CallerEnv: caller, Trust: none})
	if got, ok := envLookup(cmd.Env, WorkspaceEnv); ok {
		t.Fatalf("no workspace: %s = %q, want it unset", WorkspaceEnv, got)
	}
}

// Attack: a symlink below the workspace on a declared path would lead the
// grant outside it; refused, naming the link. Twin: the real directory.
func TestPrepareWorkspaceSymlink(t *testing.T) {
	lockDir, ws, outside := lockDirWithTools(t), realDir(t), realDir(t)
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	tr := testTrust(t, lockDir).WithWorkspace(Workspace{Dir: ws, From: FromFlag})
	_, _, err := Prepare(lockDir, workspaceTool(), nil, Params{Verb: VerbRun, CallerEnv: callerEnv, Trust: tr})
	var r *sandbox.RefusalError
	if !errors.As(err, &r) || r.Field != sandbox.FieldWrite || !strings.Contains(r.Reason, "symlink") {
		t.Fatalf("Prepare = %v, want a refusal of runtime.sandbox.fs.write naming the symlink", err)
	}
	if err := os.Remove(filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Prepare(lockDir, workspaceTool(), nil, Params{Verb: VerbRun, CallerEnv: callerEnv, Trust: tr}); err != nil {
		t.Fatalf("twin: %v", err)
	}
}

// A tool naming the workspace is refused when the call has none, with
// why; the message says how to name one.
func TestPrepareWithoutWorkspace(t *testing.T) {
	lockDir := lockDirWithTools(t)
	tr := testTrust(t, lockDir).WithWorkspace(Workspace{Dir: "/", From: FromFlag})
	_, _, err := Prepare(lockDir, workspaceTool(), nil, Params{Verb: VerbRun, CallerEnv: callerEnv, Trust: tr})
	var we *WorkspaceError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "--workspace DIR") {
		t.Fatalf("Prepare = %v, want the *WorkspaceError with its fix", err)
	}
	_, _, err = Prepare(lockDir, workspaceTool(), nil, Params{Verb: VerbRun, CallerEnv: callerEnv, Trust: testTrust(t, lockDir)})
	if !errors.Is(err, ErrNoWorkspace) {
		t.Fatalf("Prepare without WithWorkspace = %v, want ErrNoWorkspace", err)
	}
}

// What may be a workspace. Each refusal is a directory that would hand a
// tool more than a project; the twins are ordinary projects.
func TestResolveWorkspace(t *testing.T) {
	lockDir, proj, state, envRoot := realDir(t), realDir(t), realDir(t), realDir(t)
	link := filepath.Join(realDir(t), "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(proj, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(state, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := testTrust(t, lockDir)
	tr.Hidden = []string{state, envRoot} // as NewTrust puts them
	tr.Protected = append(tr.Protected, file)
	home := filepath.Join(realDir(t), "u")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	shared, err := sandbox.SharedTmpPath(tr.LockPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w    Workspace
		want string // "" = refused
		why  string
	}{
		{Workspace{Dir: proj, From: FromFlag}, proj, ""},
		{Workspace{Dir: link, From: FromEnv}, proj, ""}, // followed once
		{Workspace{Dir: filepath.Join(proj, "missing"), From: FromFlag}, "", "does not exist"},
		{Workspace{Dir: file, From: FromFlag}, "", "is not a directory"},
		{Workspace{Dir: "/", From: FromCwd}, "", "is /"},
		{Workspace{Dir: "/tmp", From: FromFlag}, "", "would hand the whole of it"},
		{Workspace{Dir: "/usr/share", From: FromFlag}, "", "system directory /usr"},
		{Workspace{Dir: "/proc/self", From: FromFlag}, "", "system directory /proc"},
		{Workspace{Dir: filepath.Join(state, "sub"), From: FromFlag}, "", "keeps from every tool"},
		{Workspace{Dir: envRoot, From: FromFlag}, "", "keeps from every tool"},
		{Workspace{Dir: shared, From: FromFlag}, "", "keeps from every tool"},
		{Workspace{Dir: home, From: FromCwd}, "", "holds the home directory"},
		{Workspace{Dir: filepath.Dir(home), From: FromCwd}, "", "holds the home directory"},
	} {
		if c.w.Dir == shared {
			if err := os.MkdirAll(shared, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		got, err := tr.ResolveWorkspace(c.w)
		if c.want != "" {
			if err != nil || got != c.want {
				t.Errorf("ResolveWorkspace(%+v) = %q, %v; want %q", c.w, got, err, c.want)
			}
			continue
		}
		var we *WorkspaceError
		if !errors.As(err, &we) || !strings.Contains(err.Error(), c.why) || we.From != c.w.From {
			t.Errorf("ResolveWorkspace(%+v) = %q, %v; want a *WorkspaceError saying %q", c.w, got, err, c.why)
		}
	}
	// The home directory named explicitly is the operator's choice.
	if _, err := tr.ResolveWorkspace(Workspace{Dir: home, From: FromFlag}); err != nil {
		t.Errorf("explicit home: %v", err)
	}
}

// Precedence: --workspace, then $TOOLBOX_WORKSPACE (ChooseWorkspace), then
// the toolbox file's default, then the current directory (WithWorkspace).
func TestWorkspacePrecedence(t *testing.T) {
	lockDir, a, b, def := realDir(t), realDir(t), realDir(t), realDir(t)
	for _, c := range []struct{ flag, env, want string }{
		{a, b, a}, {"", b, b}, {"", "", ""},
	} {
		w, err := ChooseWorkspace(c.flag, c.env)
		if err != nil || w.Dir != c.want {
			t.Errorf("ChooseWorkspace(%q, %q) = %+v, %v; want %q", c.flag, c.env, w, err, c.want)
		}
	}
	if w, _ := ChooseWorkspace("rel", ""); !filepath.IsAbs(w.Dir) || w.From != FromFlag {
		t.Errorf("a relative choice is made absolute: %+v", w)
	}
	rel, err := filepath.Rel(lockDir, def)
	if err != nil {
		t.Fatal(err)
	}
	l := &manifest.Lock{Workspace: filepath.ToSlash(rel), File: manifest.FileRef{Path: "toolbox.hcl"}}
	tr := NewTrust(filepath.Join(lockDir, "toolbox.lock.json"), l)
	if got := tr.WithWorkspace(Workspace{Dir: a, From: FromFlag}).Workspace; got != a {
		t.Errorf("explicit over the file's default: %q", got)
	}
	if got := tr.WithWorkspace(Workspace{}).Workspace; got != def {
		t.Errorf("the file's default: %q, want %q", got, def)
	}
	t.Chdir(b)
	if got := NewTrust(filepath.Join(lockDir, "toolbox.lock.json"), &manifest.Lock{File: l.File}).WithWorkspace(Workspace{}).Workspace; got != b {
		t.Errorf("the current directory: %q, want %q", got, b)
	}
}

// The builtin's {workspace} paths follow the call's workspace; described
// without a trust, they stay as declared.
func TestProcessSpecWorkspace(t *testing.T) {
	lockDir, ws := realDir(t), realDir(t)
	pb := &manifest.ProcessBuiltin{Mechanism: "bwrap", Sandbox: &protocol.Sandbox{
		FS: &protocol.FS{Read: []string{"{workspace}"}, Write: []string{"{workspace}"}}, Net: "none", Tmp: "shared"}}
	spec, err := ProcessSpec(lockDir, pb, nil)
	if err != nil || spec.Write[0] != "{workspace}" {
		t.Fatalf("described: %v, %v", spec, err)
	}
	tr := testTrust(t, lockDir).WithWorkspace(Workspace{Dir: ws, From: FromFlag})
	spec, err = ProcessSpec(lockDir, pb, tr)
	if err != nil || spec.Write[0] != ws || spec.Read[0] != ws || spec.Resolved[ws] != ws {
		t.Fatalf("started: %+v, %v", spec, err)
	}
	if _, err := ProcessSpec(lockDir, pb, testTrust(t, lockDir)); !errors.Is(err, ErrNoWorkspace) {
		t.Fatalf("no workspace: %v", err)
	}
	if !UsesWorkspace(&manifest.Lock{Process: pb}) || UsesWorkspace(&manifest.Lock{Tools: map[string]*manifest.Tool{"x": sandboxedTool()}}) {
		t.Fatal("UsesWorkspace")
	}
	writes := sandboxedTool()
	writes.Describe.Runtime.Sandbox.FS.Write = []string{"{workspace}/out"}
	rundir := sandboxedTool()
	rundir.Runtime.Rundir = "{workspace}"
	srv := &manifest.MCPServer{Sandbox: pb.Sandbox}
	for name, l := range map[string]*manifest.Lock{
		"tool write":  {Tools: map[string]*manifest.Tool{"x": writes}},
		"tool rundir": {Tools: map[string]*manifest.Tool{"x": rundir}},
		"mcp server":  {MCPServers: map[string]*manifest.MCPServer{"s": srv}},
	} {
		if !UsesWorkspace(l) {
			t.Errorf("UsesWorkspace(%s) = false", name)
		}
	}
}

func envLookup(env []string, name string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func envValue(env []string, name string) string {
	v, _ := envLookup(env, name)
	return v
}

// declared.grant is the one resolution of declared fs paths (a tool's, an
// MCP server's, builtin "process"'s): relative ones under base, absolute
// ones cleaned, those naming the workspace under the call's workspace as
// their own resolution, lock-time resolutions against the lock's real
// directory; a refusal carries the owner; without a trust a workspace
// path stays as declared only when keepWorkspace says so.
func TestDeclaredGrant(t *testing.T) {
	real := t.TempDir()
	lockDir := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, lockDir); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	trust := (&Trust{}).WithWorkspace(Workspace{Dir: ws, From: FromFlag})
	if trust.WorkspaceErr != nil {
		t.Fatal(trust.WorkspaceErr)
	}
	fs := &protocol.FS{Read: []string{"data", "/etc/../etc", "{workspace}/src"}, Write: []string{"out"}}
	d := declared{base: "/tools/x", readField: sandbox.FieldRead, writeField: sandbox.FieldWrite,
		locked: map[string]string{"data": "data/real", "{workspace}/src": "ignored"}, lockDir: lockDir}
	spec := &sandbox.Spec{}
	if err := d.grant(spec, fs, trust); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/tools/x/data", "/etc", ws + "/src"}; !slices.Equal(spec.Read, want) {
		t.Errorf("Read = %q, want %q", spec.Read, want)
	}
	if want := []string{"/tools/x/out"}; !slices.Equal(spec.Write, want) {
		t.Errorf("Write = %q, want %q", spec.Write, want)
	}
	want := map[string]string{"/tools/x/data": real + "/data/real", ws + "/src": ws + "/src"}
	if !reflectEqual(spec.Resolved, want) {
		t.Errorf("Resolved = %v, want %v", spec.Resolved, want)
	}

	// Without a trust: kept as declared for a description, else refused
	// with the owner and the field.
	d = declared{base: "/lock", readField: "sandbox.fs.read", writeField: "sandbox.fs.write", keepWorkspace: true}
	spec = &sandbox.Spec{}
	if err := d.grant(spec, &protocol.FS{Write: []string{"{workspace}/out"}}, nil); err != nil || !slices.Equal(spec.Write, []string{"{workspace}/out"}) {
		t.Errorf("described: %q, %v", spec.Write, err)
	}
	d.keepWorkspace = false
	err := d.grant(&sandbox.Spec{Block: `builtin "process"`}, &protocol.FS{Write: []string{"{workspace}/out"}}, nil)
	if !errors.Is(err, ErrNoWorkspace) || !strings.HasPrefix(err.Error(), `builtin "process": `) {
		t.Errorf("no workspace: %v, want ErrNoWorkspace after the owner", err)
	}
	// No fs, no grants.
	spec = &sandbox.Spec{}
	if err := d.grant(spec, nil, trust); err != nil || spec.Read != nil || spec.Write != nil || spec.Resolved != nil {
		t.Errorf("nil fs: %+v, %v", spec, err)
	}
}

// WorkspaceEnvIn reads $TOOLBOX_WORKSPACE from a caller's environment as
// os/exec would: a later entry wins, a longer name sharing the prefix or an
// entry without "=" is not it.
func TestWorkspaceEnvIn(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, ""},
		{[]string{WorkspaceEnv + "X=/no", WorkspaceEnv}, ""},
		{[]string{WorkspaceEnv + "=/a", "A=b", WorkspaceEnv + "=/b"}, "/b"},
		{[]string{WorkspaceEnv + "=/a=b"}, "/a=b"},
	} {
		if got := WorkspaceEnvIn(tc.env); got != tc.want {
			t.Errorf("WorkspaceEnvIn(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
