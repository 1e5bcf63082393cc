package manifest

import (
	"encoding/json"
	"strings"

	"github.com/toolbox-dev/toolbox/protocol"
)

// hashOf returns a well-formed fake sha256 made of one repeated digit.
func hashOf(c byte) string { return strings.Repeat(string(c), 64) }

// testLock returns a valid lock exercising most fields: an exec v1 tool, an
// exec v2 tool with a runtime, a plugin, and a capability.
func testLock() *Lock {
	l := New()
	l.File = FileRef{Path: "toolbox.hcl", SHA256: hashOf('a'), Config: hashOf('f')}
	l.Sandbox = "auto"
	l.EnvdirRoot = "env"
	l.Builtins = []string{"process"}
	l.Process = &ProcessBuiltin{Mechanism: "bwrap", Sandbox: &protocol.Sandbox{
		FS: &protocol.FS{Read: []string{"."}, Write: []string{"out"}}, Net: "none", Tmp: "shared",
	}}
	l.Bwrap = &Pin{Path: "/usr/bin/bwrap", SHA256: hashOf('e')}
	l.Tools["read_file"] = &Tool{
		Kind: "exec", Path: "tools/read_file", SHA256: hashOf('b'),
		Platform: "linux/amd64", Protocol: 1,
		Describe: &protocol.Describe{
			Slug: "read_file", Description: "Read a file <with> & ranges.",
			Args: []protocol.Arg{{
				Name: "path", Description: "the file", Type: "path",
				BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional,
			}},
		},
		Runtime: Runtime{Mechanism: "none"},
		Probe:   Probe{Status: StatusUnverified},
	}
	stop := 2.5
	l.Tools["search_rg"] = &Tool{
		Kind: "exec", Path: "tools/search_rg", SHA256: hashOf('c'),
		Platform: "linux/amd64", Protocol: 2,
		Describe: &protocol.Describe{
			Protocol: 2, Slug: "search_rg", Description: "Search code.", Args: []protocol.Arg{},
			Check: true,
			Process: &protocol.Process{Mode: "stream", Output: &protocol.Output{
				Framing: "jsonl",
				Event:   json.RawMessage(`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer","maximum":1.50}}}`),
			}},
			Runtime: &protocol.Runtime{
				Sandbox:     &protocol.Sandbox{FS: &protocol.FS{Read: []string{"."}}, Net: "none"},
				RunAs:       &protocol.RunAs{User: "nobody"},
				Environment: map[string]string{"B": "2", "A": "1"},
				Timeout:     &protocol.Timeout{Stop: &stop},
			},
		},
		Runtime: Runtime{
			Mechanism: "bwrap", Envdir: "env/search_rg", Rundir: "run/search",
			RunAs:          &Identity{User: "nobody", UID: 65534, GID: 65534, Groups: []uint32{65534}},
			TimeoutSeconds: 30,
			Paths:          map[string]string{".": "tools"},
		},
		Probe: Probe{Status: StatusOK, Detail: "ripgrep 14"},
	}
	l.Tools["search_grep"] = &Tool{
		Kind: "plugin", Path: "plugins/grep", SHA256: hashOf('d'),
		Platform: "linux/amd64", Protocol: 1,
		Describe: &protocol.Describe{Slug: "search_grep", Description: "grep", Args: []protocol.Arg{}},
		Runtime:  Runtime{Mechanism: "none"},
		Probe:    Probe{Status: StatusFailed, Detail: "grep: not found", Fix: "apt-get install grep"},
	}
	l.Capabilities["search"] = &Capability{
		Description: "Search the code.",
		Backends:    []string{"search_rg", "search_grep"},
		Required:    true,
		Active:      "search_rg",
	}
	return l
}

// mustMarshal marshals l or fails the test via panic-free t.Fatal in callers.
func mustMarshal(t interface {
	Helper()
	Fatalf(string, ...any)
}, l *Lock) []byte {
	t.Helper()
	b, err := Marshal(l)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return b
}
