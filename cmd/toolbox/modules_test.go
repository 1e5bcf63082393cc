package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// The repository holds several Go modules (DESIGN.md §1): the main one,
// and, nested, the protocol module, the plugin SDK module and the example
// plugins' module, tied together for development by go.work. A build from
// the module proxy (go install …@version, a plugin author's go get) sees
// none of that: it reads each go.mod alone and fetches the nested modules
// at the versions the go.mod files require. These tests build that world
// offline: a module proxy directory serving every module of the
// repository, as it is in this tree, at the version go.work replaces it
// at (the version the next release tags), and a private module cache.

var updateModules = flag.Bool("update-modules", false, "run `go mod tidy` in every module of the repository (against the tree's own nested modules) instead of checking that it changes nothing")

// repoModule is one module of the repository.
type repoModule struct {
	Path string // the module path
	Dir  string // its directory, absolute
	// Version is the version at which go.work replaces it: what the other
	// modules require, and what the next release tags. Empty for a module
	// nothing requires (the main module, the example plugins).
	Version string
}

// workspace lists the repository's modules from go.work (go work edit
// -json), each with the version go.work replaces it at.
func workspace(t *testing.T, repo string) []repoModule {
	t.Helper()
	cmd := exec.Command("go", "work", "edit", "-json")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var w struct {
		Use     []struct{ DiskPath string }
		Replace []struct {
			Old struct{ Path, Version string }
			New struct{ Path string }
		}
	}
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatal(err)
	}
	var mods []repoModule
	for _, u := range w.Use {
		dir := filepath.Join(repo, u.DiskPath)
		mods = append(mods, repoModule{Path: modulePath(t, dir), Dir: dir})
	}
	for i, m := range mods {
		for _, r := range w.Replace {
			if r.Old.Path == m.Path && filepath.Join(repo, r.New.Path) == m.Dir {
				mods[i].Version = r.Old.Version
			}
		}
	}
	return mods
}

// goMod is what go mod edit -json says of a go.mod.
type goMod struct {
	Module  struct{ Path string }
	Require []struct {
		Path, Version string
		Indirect      bool
	}
}

func readGoMod(t *testing.T, dir string) goMod {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var m goMod
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func modulePath(t *testing.T, dir string) string { return readGoMod(t, dir).Module.Path }

func rel(base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return r
}

// modEnv is a go command environment that fetches the repository's
// modules from a proxy directory made from this tree, everything else from
// the local module cache (then the configured proxy), into a private
// module cache, with go.work off.
type modEnv struct {
	repo  string
	mods  []repoModule
	proxy string
	env   []string
}

// mainTestVersion is the version at which the proxy serves the main module.
const mainTestVersion = "v0.0.0-test"

// newModEnv builds the environment under t's temporary directory: its
// proxy holds the main module at mainTestVersion and each nested module at
// its version.
func newModEnv(t *testing.T) *modEnv {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	e := &modEnv{repo: repo, mods: workspace(t, repo)}
	root := t.TempDir()
	e.proxy = filepath.Join(root, "proxy")
	for _, m := range e.mods {
		v := m.Version
		if v == "" {
			v = mainTestVersion
		}
		if err := serveModule(e.proxy, m, v); err != nil {
			t.Fatalf("serving %s: %v", m.Path, err)
		}
	}
	cache := goEnv(t, "GOMODCACHE")
	e.env = append(os.Environ(),
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOPROXY=file://"+e.proxy+",file://"+filepath.Join(cache, "cache", "download")+","+goEnv(t, "GOPROXY"),
		"GOMODCACHE="+filepath.Join(root, "modcache"),
		// The repository's modules are served from this tree and are not
		// in any checksum database; every other one is checked against
		// the go.sum files.
		"GONOSUMDB=github.com/toolbox-dev/toolbox",
		// -modcacherw: t.TempDir can remove the private module cache.
		"GOFLAGS="+strings.TrimSpace(goEnv(t, "GOFLAGS")+" -modcacherw"),
	)
	return e
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// serveModule writes m at version v into the proxy directory: list, info,
// mod and zip, the zip holding the files a commit of this tree would hold
// (git's tracked and untracked-but-not-ignored files, nested modules left
// out; outside a git work tree, every file).
func serveModule(proxy string, m repoModule, v string) error {
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
	if err != nil {
		return err
	}
	info := `{"Version":"` + v + `","Time":"2026-01-01T00:00:00Z"}`
	for name, data := range map[string][]byte{"list": []byte(v + "\n"), v + ".info": []byte(info), v + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	mv := module.Version{Path: m.Path, Version: v}
	var zip bytes.Buffer
	if files, err := moduleFiles(m.Dir); err == nil {
		err = modzip.Create(&zip, mv, files)
		if err != nil {
			return err
		}
	} else if err := modzip.CreateFromDir(&zip, mv, m.Dir); err != nil {
		// Not a git work tree: every file of the directory.
		return err
	}
	return os.WriteFile(filepath.Join(dir, v+".zip"), zip.Bytes(), 0o644)
}

// moduleFiles lists the files of the module rooted at dir: those git
// tracks or would add (not ignored), outside nested modules.
func moduleFiles(dir string) ([]modzip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range strings.Split(string(out), "\x00") {
		if n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var files []modzip.File
	for _, n := range names {
		if inNestedModule(dir, n) {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(n))
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		files = append(files, diskFile{slash: n, path: p, info: st})
	}
	return files, nil
}

// inNestedModule says whether the file name (slash-separated, relative to
// root) lies below a directory of its own with a go.mod.
func inNestedModule(root, name string) bool {
	for d := filepath.Dir(filepath.FromSlash(name)); d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(root, d, "go.mod")); err == nil {
			return true
		}
	}
	return false
}

// diskFile is a modzip.File read from disk.
type diskFile struct {
	slash, path string
	info        os.FileInfo
}

func (f diskFile) Path() string                 { return f.slash }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }

// run runs go with args in dir under the environment and returns its
// combined output.
func (e *modEnv) run(t *testing.T, dir string, extraEnv []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clone(e.env), extraEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestModules checks the repository as the module proxy will serve it.
func TestModules(t *testing.T) {
	e := newModEnv(t)
	t.Run("tidy", func(t *testing.T) { testTidy(t, e) })
	t.Run("pinned", func(t *testing.T) { testPinned(t, e) })
	t.Run("tested", func(t *testing.T) { testTested(t, e) })
	gobin := t.TempDir()
	installed := t.Run("install", func(t *testing.T) { testInstall(t, e, gobin) })
	t.Run("example-plugins", func(t *testing.T) {
		if !installed {
			t.Skip("the install failed")
		}
		testExamplePlugins(t, e, gobin)
	})
}

// testTidy: `go mod tidy` changes nothing in any module of the repository,
// run as a release would see it (each go.mod alone, the nested modules
// fetched at the versions required). Go marks every dependency a module's
// packages import directly as direct, and drops what none needs. After a
// change to a nested module (protocol/, plugins/sdk/) its hash in the
// other modules' go.sum changes: go test ./cmd/toolbox -run TestModules
// -update-modules rewrites them.
func testTidy(t *testing.T, e *modEnv) {
	if *updateModules {
		updateTidy(t)
		return
	}
	for _, m := range e.mods {
		t.Run(rel(e.repo, m.Dir), func(t *testing.T) {
			if out, err := e.run(t, m.Dir, nil, "mod", "tidy", "-diff"); err != nil {
				t.Errorf("go mod tidy -diff in %s: %v\n%s\nrun: go test ./cmd/toolbox -run TestModules/tidy -update-modules", rel(e.repo, m.Dir), err, out)
			}
		})
	}
}

// updateTidy runs go mod tidy in every module until nothing changes: a
// nested module's go.mod and go.sum are in its zip, so tidying it changes
// its hash in the go.sum of the modules that require it.
func updateTidy(t *testing.T) {
	for round := 0; round < 4; round++ {
		e := newModEnv(t)
		changed := false
		for _, m := range e.mods {
			before := readModFiles(m.Dir)
			// The hashes of the repository's modules are the tree's
			// now: drop the old ones, which would fail verification.
			dropSums(t, filepath.Join(m.Dir, "go.sum"), e.mods)
			if out, err := e.run(t, m.Dir, nil, "mod", "tidy"); err != nil {
				t.Fatalf("go mod tidy in %s: %v\n%s", rel(e.repo, m.Dir), err, out)
			}
			changed = changed || readModFiles(m.Dir) != before
		}
		if !changed {
			return
		}
	}
	t.Fatal("go mod tidy still changes files after 4 rounds")
}

// dropSums removes the lines of the repository's modules from a go.sum.
func dropSums(t *testing.T, path string, mods []repoModule) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !slices.ContainsFunc(mods, func(m repoModule) bool { return strings.HasPrefix(line, m.Path+" ") }) {
			keep = append(keep, line)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(keep, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readModFiles(dir string) string {
	mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	sum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
	return string(mod) + "\x00" + string(sum)
}

// testPinned: every module that requires another module of the
// repository requires it at the version go.work replaces it at (without
// that replacement the go command would look the version up on the proxy
// even in workspace mode), so that what a release tags is what the
// workspace built.
func testPinned(t *testing.T, e *modEnv) {
	for _, m := range e.mods {
		for _, r := range readGoMod(t, m.Dir).Require {
			for _, n := range e.mods {
				if r.Path == n.Path && r.Version != n.Version {
					t.Errorf("%s requires %s %s; go.work must replace it at that version: %s %s => ./%s", m.Path, n.Path, r.Version, n.Path, r.Version, rel(e.repo, n.Dir))
				}
			}
		}
	}
}

// testTested: the test command (the README's, which .ci/run runs) names
// every nested module, which ./... leaves out.
func testTested(t *testing.T, e *modEnv) {
	command := func(file string) string {
		data, err := os.ReadFile(filepath.Join(e.repo, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "go vet ") {
				return line
			}
		}
		t.Fatalf("%s has no line starting with \"go vet \"", file)
		return ""
	}
	readme, ci := command("README.md"), command(".ci/run")
	if readme != ci {
		t.Errorf("the README's test command differs from .ci/run's:\n%s\n%s", readme, ci)
	}
	for _, m := range e.mods {
		if m.Dir == e.repo {
			continue
		}
		pattern := "./" + rel(e.repo, m.Dir) + "/..."
		if strings.Count(ci, " "+pattern+" ") != 2 {
			t.Errorf(".ci/run does not vet and test %s (the module %s): name it in go vet and go list", pattern, m.Path)
		}
	}
}

// testInstall: go install <module>/cmd/...@version installs toolbox,
// toolbox-core and toolbox-reaper into GOBIN, as does go install ./cmd/... in a clone; the
// installed toolbox hands its core commands to the toolbox-core beside it,
// whether GOBIN is on PATH or not, and never to another one on PATH. The
// install from the proxy goes to fromProxy.
func testInstall(t *testing.T, e *modEnv, fromProxy string) {
	// -trimpath keeps the build cache useful: without it the private module
	// cache's path is part of every package's key, and the two installs
	// and the example plugins' build would compile everything anew.
	if out, err := e.run(t, t.TempDir(), []string{"GOBIN=" + fromProxy}, "install", "-trimpath", "github.com/toolbox-dev/toolbox/cmd/...@"+mainTestVersion); err != nil {
		t.Fatalf("go install github.com/toolbox-dev/toolbox/cmd/...@%s: %v\n%s", mainTestVersion, err, out)
	}
	fromClone := t.TempDir()
	cmd := exec.Command("go", "install", "-trimpath", "./cmd/...")
	cmd.Dir = e.repo
	cmd.Env = append(os.Environ(), "GOBIN="+fromClone)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/... in the clone: %v\n%s", err, out)
	}
	for name, gobin := range map[string]string{"at-version": fromProxy, "from-clone": fromClone} {
		t.Run(name, func(t *testing.T) {
			for _, b := range []string{"toolbox", "toolbox-core", "toolbox-reaper"} {
				if st, err := os.Stat(filepath.Join(gobin, b)); err != nil || st.Mode()&0o111 == 0 {
					t.Fatalf("%s not installed in GOBIN: %v", b, err)
				}
			}
			checkHandOver(t, gobin)
		})
	}
}

// systemPath is a PATH without any Go binary directory.
const systemPath = "/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin"

// checkHandOver runs the installed toolbox from another directory on a
// command only toolbox-core has (lock), three ways.
func checkHandOver(t *testing.T, gobin string) {
	// lock writes the lock: proof that toolbox-core ran.
	lockIn := func(t *testing.T, path string, argv ...string) {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "toolbox.hcl"), []byte("sandbox = \"none\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v with PATH=%s: %v\n%s", argv, path, err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "toolbox.lock.json")); err != nil {
			t.Fatalf("%v: no lock written (%v)\n%s", argv, err, out)
		}
	}
	t.Run("GOBIN-not-on-PATH", func(t *testing.T) {
		lockIn(t, systemPath, filepath.Join(gobin, "toolbox"), "lock")
	})
	t.Run("GOBIN-on-PATH", func(t *testing.T) {
		lockIn(t, gobin+":"+systemPath, "sh", "-c", "exec toolbox lock")
	})
	// Another toolbox-core earlier on PATH (an older install, or a planted
	// one) is never run: the one installed beside toolbox is.
	t.Run("decoy-on-PATH", func(t *testing.T) {
		decoy := t.TempDir()
		marker := filepath.Join(decoy, "ran")
		script := "#!/bin/sh\ntouch " + marker + "\nexit 99\n"
		if err := os.WriteFile(filepath.Join(decoy, "toolbox-core"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		lockIn(t, decoy+":"+gobin+":"+systemPath, "sh", "-c", "exec toolbox lock")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the toolbox-core found first on PATH ran, not the one beside toolbox")
		}
	})
	// Without a toolbox-core beside it or on PATH, toolbox says how to
	// install both.
	t.Run("core-missing", func(t *testing.T) {
		alone := t.TempDir()
		data, err := os.ReadFile(filepath.Join(gobin, "toolbox"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(alone, "toolbox"), data, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(alone, "toolbox"), "lock")
		cmd.Dir = alone
		cmd.Env = append(os.Environ(), "PATH="+systemPath)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "go install github.com/toolbox-dev/toolbox/cmd/...@latest") {
			t.Errorf("toolbox lock without toolbox-core: %v\n%s", err, out)
		}
	})
}

// testExamplePlugins builds the example plugins as their author would,
// from their own go.mod (no go.work), checks that they link none of the
// toolbox's own packages, HCL, the MCP SDK or a JSON Schema validator, and
// runs one through the toolbox installed in gobin: describe --plugin,
// lock, run.
func testExamplePlugins(t *testing.T, e *modEnv, gobin string) {
	dir := filepath.Join(e.repo, "plugins", "examples")
	for _, r := range readGoMod(t, dir).Require {
		if !r.Indirect && r.Path != "github.com/toolbox-dev/toolbox/plugins/sdk" && r.Path != "github.com/toolbox-dev/toolbox/protocol" {
			t.Errorf("plugins/examples/go.mod requires %s directly; a plugin needs only the SDK and protocol modules", r.Path)
		}
	}
	out, err := e.run(t, dir, nil, "list", "-deps", "./...")
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(out) {
		banned := strings.HasPrefix(p, "github.com/hashicorp/hcl/") ||
			strings.HasPrefix(p, "github.com/modelcontextprotocol/") ||
			strings.HasPrefix(p, "github.com/santhosh-tekuri/jsonschema") ||
			strings.HasPrefix(p, "github.com/toolbox-dev/toolbox/protocol/validate") ||
			(strings.HasPrefix(p, "github.com/toolbox-dev/toolbox/") &&
				!strings.HasPrefix(p, "github.com/toolbox-dev/toolbox/protocol") &&
				!strings.HasPrefix(p, "github.com/toolbox-dev/toolbox/plugins/sdk") &&
				!strings.HasPrefix(p, "github.com/toolbox-dev/toolbox/plugins/examples"))
		if banned {
			t.Errorf("the example plugins link %s", p)
		}
	}
	// A toolbox of its own, and a project apart that the plugin reads as
	// its workspace ({workspace} in its runtime).
	ws := t.TempDir()
	tb := filepath.Join(t.TempDir(), "toolboxes", "mine")
	if out, err := e.run(t, dir, nil, "build", "-trimpath", "-o", filepath.Join(tb, "plugins")+"/", "./read_file"); err != nil {
		t.Fatalf("go build ./read_file: %v\n%s", err, out)
	}
	toolbox := filepath.Join(gobin, "toolbox")
	plugin := filepath.Join(tb, "plugins", "read_file")
	if out, err := exec.Command(toolbox, "describe", "--plugin", plugin).CombinedOutput(); err != nil || !strings.Contains(string(out), "valid protocol 2 describe document") {
		t.Fatalf("toolbox describe --plugin: %v\n%s", err, out)
	}
	s := sandbox.Detect()
	testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason) // net none and tmp private
	hcl := "sandbox = \"bwrap\"\nplugin \"read_file\" { path = \"plugins/read_file\" }\n"
	if err := os.WriteFile(filepath.Join(tb, "toolbox.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"lock"}, {"run", "read_file", "--workspace", ws, "--args", `{"path": "hello.txt", "start": 2}`}} {
		cmd := exec.Command(toolbox, append([]string{"-f", filepath.Join(tb, "toolbox.hcl")}, argv...)...)
		cmd.Env = append(os.Environ(), "PATH="+systemPath)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("toolbox %v: %v\n%s", argv, err, out)
		}
		if argv[0] == "run" && string(out) != "two\n" {
			t.Errorf("toolbox run read_file: %q, want %q", out, "two\n")
		}
	}
}
