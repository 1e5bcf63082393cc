// Package locktest builds hand-made locks of small /bin/sh tools for the
// tests of the packages that run tools from a lock (launcher, the
// supervisor, the servers). It hashes files itself, independently of
// manifest.HashFile, so that a test of verification cannot agree with the
// code under test by construction. It is for tests only.
package locktest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Fixture is a directory holding toolbox.hcl, tools under tools/ and a lock
// (not written to disk) whose paths are relative to the directory.
type Fixture struct {
	Dir      string
	LockPath string
	Lock     *manifest.Lock
}

// New writes toolbox.hcl with hcl in a temporary directory and starts a
// lock of it: mechanism none, builtins as given (builtin "process"
// unconfined; tests of confinement set Lock.Process themselves), no tools
// yet.
func New(t testing.TB, hcl string, builtins ...string) *Fixture {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "toolbox.hcl")
	WriteFile(t, path, hcl, 0o644)
	l := manifest.New()
	// The configuration digest is never computed while the bytes match;
	// any well-formed digest does.
	l.File = manifest.FileRef{Path: "toolbox.hcl", SHA256: SHA256File(t, path), Config: SHA256File(t, path)}
	l.Sandbox = "none"
	l.Builtins = builtins
	if slices.Contains(builtins, manifest.BuiltinProcess) {
		l.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	}
	lockPath := filepath.Join(dir, "toolbox.lock.json")
	// A sandboxed tool run from this lock gets the toolbox's shared tmp,
	// which toolbox never removes: the test does.
	t.Cleanup(func() {
		if shared, err := sandbox.SharedTmpPath(lockPath); err == nil {
			os.RemoveAll(shared)
		}
	})
	return &Fixture{Dir: dir, LockPath: lockPath, Lock: l}
}

// AddTool writes script as tools/NAME ("#!/bin/sh" prepended; $1 is the
// verb) and locks it with describe d (a v1 document without args when nil),
// probe ok, mechanism none, this platform.
func (f *Fixture) AddTool(t testing.TB, name, script string, d *protocol.Describe) *manifest.Tool {
	t.Helper()
	dir := filepath.Join(f.Dir, "tools")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	WriteFile(t, path, "#!/bin/sh\n"+script+"\n", 0o755)
	if d == nil {
		d = &protocol.Describe{Slug: name, Description: "test tool " + name, Args: []protocol.Arg{}}
	}
	tool := &manifest.Tool{
		Kind:     manifest.KindExec,
		Path:     "tools/" + name,
		SHA256:   SHA256File(t, path),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Protocol: d.EffectiveProtocol(),
		Describe: d,
		Runtime:  manifest.Runtime{Mechanism: "none"},
		Probe:    manifest.Probe{Status: manifest.StatusOK},
	}
	f.Lock.Tools[name] = tool
	return tool
}

// WriteFile writes content to path with mode, failing the test on error.
func WriteFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// SHA256File is the hex sha256 of path's content.
func SHA256File(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
