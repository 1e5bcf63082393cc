package launcher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"toolbox/internal/locktest"
	"toolbox/manifest"
	"toolbox/protocol"
	"toolbox/protocol/validate"
)

// fixture is a locktest.Fixture: toolbox.hcl, /bin/sh tools under tools/
// and a hand-built lock whose paths are relative to the directory.
type fixture struct {
	dir      string
	lockPath string
	lock     *manifest.Lock
	lt       *locktest.Fixture
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	lt := locktest.New(t, "sandbox = \"none\"\n")
	return &fixture{dir: lt.Dir, lockPath: lt.LockPath, lock: lt.Lock, lt: lt}
}

// addTool writes script as tools/NAME (a /bin/sh script; $1 is the verb)
// and locks it with describe d (no args when nil), probe ok, mechanism none.
func (f *fixture) addTool(t testing.TB, name, script string, d *protocol.Describe) *manifest.Tool {
	t.Helper()
	return f.lt.AddTool(t, name, script, d)
}

// writeFile and sha256File are locktest's.
func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	locktest.WriteFile(t, path, content, mode)
}

func sha256File(t testing.TB, path string) string {
	t.Helper()
	return locktest.SHA256File(t, path)
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

func arg(name, mode, arity string) protocol.Arg {
	return protocol.Arg{Name: name, Description: name, Type: "string", BackingType: "string", Arity: arity, Mode: mode}
}

func seconds(s float64) *float64 { return &s }
