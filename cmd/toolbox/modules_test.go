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
		Use []struct{ DiskPath string }
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

// modulePath and requirements read a go.mod with go mod edit -json.
func modulePath(t *testing.T, dir string) string {
	t.Helper()
	p, _ := goModJSON(t, dir)
	return p
}

// requirements are the module paths dir's go.mod requires, with their
// versions.
func requirements(t *testing.T, dir string) map[string]string {
	t.Helper()
	_, req := goModJSON(t, dir)
	return req
}

func goModJSON(t *testing.T, dir string) (path string, req map[string]string) {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var m struct {
		Module  struct{ Path string }
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	req = map[string]string{}
	for _, r := range m.Require {
		req[r.Path] = r.Version
	}
	return m.Module.Path, req
}

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
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -modcacherw"),
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
// out).
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
	files, err := moduleFiles(m.Dir)
	if err != nil {
		return err
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, module.Version{Path: m.Path, Version: v}, files); err != nil {
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
		req := requirements(t, m.Dir)
		for _, n := range e.mods {
			if v, ok := req[n.Path]; ok && v != n.Version {
				t.Errorf("%s requires %s %s; go.work must replace it at that version: %s %s => ./%s", m.Path, n.Path, v, n.Path, v, rel(e.repo, n.Dir))
			}
		}
	}
}
