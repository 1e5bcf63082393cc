package runspec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// NewTrust protects everything a later run trusts and hides the state dir
// and the envdir root (every tool's secrets).
func TestNewTrust(t *testing.T) {
	dir := t.TempDir()
	l := manifest.New()
	l.File = manifest.FileRef{Path: "toolbox.hcl"}
	l.EnvdirRoot = "env"
	l.Bwrap = &manifest.Pin{Path: "/usr/bin/bwrap", SHA256: strings.Repeat("a", 64)}
	l.Tools["a"] = &manifest.Tool{Path: "tools/a"}
	l.Tools["b"] = &manifest.Tool{Path: "/opt/b"}
	l.Tools["b.cmd"] = &manifest.Tool{Path: "/opt/b"}
	lock := filepath.Join(dir, "toolbox.lock.json")
	tr := NewTrust(lock, l, "/var/lib/toolbox")
	self, _ := os.Executable()
	for _, want := range []string{lock, dir + "/toolbox.hcl", dir + "/tools/a", "/opt/b", "/usr/bin/bwrap", self} {
		if !slices.Contains(tr.Protected, want) {
			t.Errorf("%s is not protected: %q", want, tr.Protected)
		}
	}
	if !slices.Equal(tr.Hidden, []string{"/var/lib/toolbox", dir + "/env"}) || tr.Bwrap == nil || tr.Bwrap.Path != "/usr/bin/bwrap" || tr.LockPath != lock {
		t.Errorf("trust %+v", tr)
	}
	if h := NewTrust(lock, l, "").Hidden; !slices.Equal(h, []string{dir + "/env"}) {
		t.Errorf("no state dir: hidden %q, want only the envdir root", h)
	}
}

// TrustOf is the one maker of the lists: the lock, the toolbox file, the
// binaries in the order given (each once, "" skipped, relative ones
// against the lock's directory), the pin and toolbox's executables;
// hidden: the given directories, then the envdir root. NewTrust is
// TrustOf on what the lock names, its binaries sorted.
func TestTrustOf(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "toolbox.lock.json")
	pin := &sandbox.BwrapPin{Path: "/usr/bin/bwrap", SHA256: strings.Repeat("a", 64)}
	tr := TrustOf(lock, Guarded{
		ToolboxFile: filepath.Join(dir, "toolbox.hcl"),
		EnvdirRoot:  "env",
		Binaries:    []string{"tools/z", "", "/opt/b", dir + "/tools/z", "tools/a"},
		Bwrap:       pin,
		Hidden:      []string{"", "/var/lib/toolbox"},
	})
	want := append([]string{lock, dir + "/toolbox.hcl", dir + "/tools/z", "/opt/b", dir + "/tools/a", "/usr/bin/bwrap"}, SelfExecutables()...)
	if !slices.Equal(tr.Protected, want) {
		t.Errorf("Protected = %q, want %q", tr.Protected, want)
	}
	if !slices.Equal(tr.Hidden, []string{"/var/lib/toolbox", dir + "/env"}) || tr.Bwrap != pin || tr.LockPath != lock || tr.defaultWorkspace != "" {
		t.Errorf("trust %+v", tr)
	}
	l := manifest.New()
	l.File = manifest.FileRef{Path: "toolbox.hcl"}
	l.Tools["z"] = &manifest.Tool{Path: "tools/z"}
	l.Tools["b"] = &manifest.Tool{Path: "/opt/b"}
	l.Tools["a"] = &manifest.Tool{Path: "tools/a"}
	l.Workspace = "ws"
	tr = NewTrust(lock, l)
	want = append([]string{lock, dir + "/toolbox.hcl", "/opt/b", dir + "/tools/a", dir + "/tools/z"}, SelfExecutables()...)
	if !slices.Equal(tr.Protected, want) || tr.defaultWorkspace != dir+"/ws" {
		t.Errorf("NewTrust: Protected = %q, want %q; default workspace %q", tr.Protected, want, tr.defaultWorkspace)
	}
}

// A sandboxed tool is never prepared without the lock's trust: its
// protected paths and pinned bwrap would be missing. The lock's
// resolutions of declared paths reach the spec; a shared tmp is made.
func TestPrepareSandboxedSpec(t *testing.T) {
	lockDir := t.TempDir()
	tool := sandboxedTool()
	tool.Describe.Runtime.Sandbox.FS.Write = []string{"/srv/link"}
	tool.Runtime.Paths = map[string]string{".": "tools", "/srv/link": "/data/real"}
	if _, _, err := Prepare(lockDir, tool, nil, Params{Verb: "run"}); err == nil || !strings.Contains(err.Error(), "NewTrust") {
		t.Fatalf("without trust: %v", err)
	}
	spec, _ := mustPrepare(t, lockDir, tool, nil, Params{Verb: "run"})
	want := map[string]string{filepath.Join(lockDir, "tools"): filepath.Join(lockDir, "tools"), "/srv/link": "/data/real"}
	if !reflectEqual(spec.Resolved, want) {
		t.Errorf("Resolved = %v, want %v", spec.Resolved, want)
	}
	st, err := os.Lstat(spec.SharedTmp)
	if err != nil || !st.IsDir() || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Fatalf("shared tmp %q: %v, %v", spec.SharedTmp, st, err)
	}
	tool.Describe.Runtime.Sandbox.Tmp = "private"
	if spec, _ := mustPrepare(t, lockDir, tool, nil, Params{Verb: "run"}); spec.SharedTmp != "" {
		t.Errorf("tmp: private got shared tmp %q", spec.SharedTmp)
	}
}

func reflectEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Issue 10 #8: the rundir was made with MkdirAll and chowned to run_as by
// toolbox as root, through a symlink the tool planted on its path, before
// any sandbox check: a tool could have toolbox create and give it any
// directory of the host. Now Prepare refuses the link and touches nothing
// behind it. Twin: the same rundir, not planted, is created and given to
// run_as.
func TestPrepareRundirPlantedSymlink(t *testing.T) {
	testenv.NeedRoot(t)
	lockDir := t.TempDir()
	victim := t.TempDir() // stands for /root
	for _, d := range []string{"tools", "work"} {
		if err := os.Mkdir(filepath.Join(lockDir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(lockDir, "work", "run")); err != nil {
		t.Fatal(err)
	}
	tool := sandboxedTool()
	tool.Describe.Runtime.Sandbox.FS.Write = []string{"../work"}
	tool.Runtime.Rundir = "work/run/sub"
	tool.Runtime.RunAs = &manifest.Identity{User: "nobody", UID: 65534, GID: 65534}
	_, _, err := Prepare(lockDir, tool, nil, Params{Verb: "run", Trust: testTrust(t, lockDir)})
	var r *sandbox.RefusalError
	if !errors.As(err, &r) || r.Field != sandbox.FieldRundir {
		t.Fatalf("planted link: %v, want a refusal of %s", err, sandbox.FieldRundir)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("toolbox created %v behind the link", ents)
	}
	if st, _ := os.Stat(victim); st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatal("the link's target was given away")
	}
	if err := os.Remove(filepath.Join(lockDir, "work", "run")); err != nil {
		t.Fatal(err)
	}
	_, cmd := mustPrepare(t, lockDir, tool, nil, Params{Verb: "run"})
	st, err := os.Stat(cmd.Dir)
	if err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Fatalf("rundir %q: %v %v", cmd.Dir, st, err)
	}
}

// A sandboxed plugin's spec says it creates unix sockets (go-plugin's
// handshake), so that the lock-time check refuses what its start would
// (landlock as uid 0); an exec tool's, or an unconfined plugin's, does not.
func TestSpecOfPluginHasUnixSockets(t *testing.T) {
	lockDir := t.TempDir()
	tr := testTrust(t, lockDir)
	for _, c := range []struct {
		kind, mech string
		want       bool
	}{{manifest.KindPlugin, "bwrap", true}, {manifest.KindPlugin, "landlock", true}, {manifest.KindExec, "bwrap", false}, {manifest.KindPlugin, "none", false}} {
		tool := sandboxedTool()
		tool.Kind, tool.Runtime.Mechanism = c.kind, c.mech
		if c.mech == "none" {
			tool.Describe.Runtime = nil
		}
		spec, err := Spec(lockDir, tool, tr)
		if err != nil || spec.UnixSockets != c.want {
			t.Errorf("%s under %s: UnixSockets %v, %v; want %v", c.kind, c.mech, spec != nil && spec.UnixSockets, err, c.want)
		}
	}
}

// Without a lock, NewTrust still protects toolbox's own executables (the
// running one at least), as TrustOf does for every lock: a nil lock is no
// reason to let a tool replace them.
func TestNewTrustNilLockProtectsSelf(t *testing.T) {
	self := SelfExecutables()
	if len(self) == 0 {
		t.Fatal("no self executables")
	}
	tr := NewTrust("/srv/tb/toolbox.lock.json", nil, "state")
	for _, want := range append([]string{"/srv/tb/toolbox.lock.json"}, self...) {
		if !slices.Contains(tr.Protected, want) {
			t.Errorf("Protected %q lacks %q", tr.Protected, want)
		}
	}
	if len(tr.Hidden) != 1 || !filepath.IsAbs(tr.Hidden[0]) {
		t.Errorf("Hidden %q, want the state dir made absolute", tr.Hidden)
	}
}
