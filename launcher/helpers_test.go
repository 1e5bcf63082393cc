package launcher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
)

// fixture is a locktest.Fixture: toolbox.hcl, /bin/sh tools under tools/
// (AddTool) and a hand-built lock whose paths are relative to Dir.
type fixture struct{ *locktest.Fixture }

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return &fixture{locktest.New(t, "sandbox = \"none\"\n")}
}

func (f *fixture) request(name string, args map[string]any) Request {
	return Request{
		LockPath:  f.LockPath,
		Lock:      f.Lock,
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
	locktest.WriteFile(t, path, "#!/bin/sh\n"+body+"\n", 0o755)
	return path
}

func arg(name, mode, arity string) protocol.Arg {
	return protocol.Arg{Name: name, Description: name, Type: "string", BackingType: "string", Arity: arity, Mode: mode}
}

func seconds(s float64) *float64 { return &s }
