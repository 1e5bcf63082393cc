package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"toolbox/manifest"
	"toolbox/protocol"
	"toolbox/protocol/validate"
)

// fixture is a directory holding a toolbox file, fake tools under tools/
// and a hand-built lock whose paths are relative to the directory.
type fixture struct {
	dir      string
	lockPath string
	lock     *manifest.Lock
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	hcl := filepath.Join(dir, "toolbox.hcl")
	writeFile(t, hcl, "sandbox = \"none\"\n", 0o644)
	return &fixture{
		dir:      dir,
		lockPath: filepath.Join(dir, "toolbox.lock.json"),
		lock: &manifest.Lock{
			Version:      manifest.FormatVersion,
			File:         manifest.FileRef{Path: "toolbox.hcl", SHA256: sha256File(t, hcl)},
			Sandbox:      "none",
			Tools:        map[string]*manifest.Tool{},
			Capabilities: map[string]*manifest.Capability{},
		},
	}
}

// addTool writes script as tools/NAME (a /bin/sh script) and locks it with
// describe d (args none when nil), probe ok, mechanism none.
func (f *fixture) addTool(t testing.TB, name, script string, d *protocol.Describe) *manifest.Tool {
	t.Helper()
	path := writeScript(t, filepath.Join(f.dir, "tools"), name, script)
	if d == nil {
		d = &protocol.Describe{Slug: name, Description: "test tool", Args: []protocol.Arg{}}
	}
	proto := d.Protocol
	if proto == 0 {
		proto = 1
	}
	tool := &manifest.Tool{
		Kind:     "exec",
		Path:     "tools/" + name,
		SHA256:   sha256File(t, path),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Protocol: proto,
		Describe: d,
		Runtime:  manifest.Runtime{Mechanism: "none"},
		Probe:    manifest.Probe{Status: manifest.StatusOK},
	}
	f.lock.Tools[name] = tool
	return tool
}

func (f *fixture) request(name string, args map[string]any) Request {
	return Request{
		LockPath:  f.lockPath,
		Lock:      f.lock,
		Name:      name,
		Args:      args,
		CallerEnv: os.Environ(),
		CompileSchema: func(schema json.RawMessage) (EventValidator, error) {
			return validate.CompileEventSchema(schema)
		},
	}
}

func writeScript(t testing.TB, dir, name, body string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	writeFile(t, path, "#!/bin/sh\n"+body+"\n", 0o755)
	return path
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// sha256File is the test's own hash, independent of manifest.HashFile.
func sha256File(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func arg(name, mode, arity string) protocol.Arg {
	return protocol.Arg{Name: name, Description: name, Type: "string", BackingType: "string", Arity: arity, Mode: mode}
}

func seconds(s float64) *float64 { return &s }
