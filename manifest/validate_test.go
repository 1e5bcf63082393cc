package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(l *Lock)
		wants []string // every one must be among the problems; none = valid
	}{
		{"valid", func(l *Lock) {}, nil},
		{"failed tool without describe", func(l *Lock) {
			l.Tools["search_grep"].Describe = nil
			l.Tools["search_grep"].Protocol = 0
		}, nil},
		{"skipped tool without describe", func(l *Lock) {
			tl := l.Tools["search_grep"]
			tl.Describe, tl.Protocol, tl.Probe.Status = nil, 0, StatusSkipped
		}, nil},
		{"unverified tool without describe", func(l *Lock) { l.Tools["read_file"].Describe = nil },
			[]string{`tool "read_file": describe is missing (required when probe.status is "unverified")`}},
		{"describe without protocol", func(l *Lock) { l.Tools["read_file"].Protocol = 0 },
			[]string{`tool "read_file": protocol is 0, want 1 or more`}},
		{"command of a multi-command binary", func(l *Lock) {
			tl := l.Tools["read_file"]
			tl.Command, tl.Binary = "lines", "read"
			tl.Describe.Commands = []protocol.Command{{Name: "lines"}}
		}, nil},
		{"unknown command", func(l *Lock) { l.Tools["read_file"].Command, l.Tools["read_file"].Binary = "bytes", "read" },
			[]string{`tool "read_file": command "bytes" is not among the describe document's commands`}},
		{"command without binary", func(l *Lock) {
			tl := l.Tools["read_file"]
			tl.Command = "lines"
			tl.Describe.Commands = []protocol.Command{{Name: "lines"}}
		}, []string{`tool "read_file": command "lines" names no binary`}},
		{"binary without command", func(l *Lock) { l.Tools["read_file"].Binary = "read" },
			[]string{`tool "read_file": binary "read" is set without a command`}},
		{"null tool", func(l *Lock) { l.Tools["x"] = nil }, []string{`tool "x" is null`}},
		{"empty tool name and fields", func(l *Lock) { l.Tools[""] = &Tool{} }, []string{
			`tools has an empty name`,
			`tool "": kind is "", want one of exec, plugin, mcp`,
			`tool "": path is missing`,
			`tool "": sha256 is "", want 64 lower-case hex digits`,
			`tool "": platform is "", want GOOS/GOARCH`,
			`tool "": probe.status is "", want one of ok, failed, unverified, skipped`,
			`tool "": runtime.mechanism is "", want one of bwrap, landlock, none`,
		}},
		{"upper-case hash", func(l *Lock) { l.Tools["read_file"].SHA256 = strings.ToUpper(hashOf('b')) },
			[]string{`tool "read_file": sha256 is "BBBB`}},
		{"negative timeout", func(l *Lock) { l.Tools["read_file"].Runtime.TimeoutSeconds = -1 },
			[]string{`tool "read_file": runtime.timeout_seconds is negative`}},
		{"plugin concurrency", func(l *Lock) { l.Tools["search_grep"].Runtime.Concurrency = 4 }, nil},
		{"concurrency out of range", func(l *Lock) { l.Tools["search_grep"].Runtime.Concurrency = 257 },
			[]string{`tool "search_grep": runtime.concurrency is 257, want 1 to 256`}},
		{"concurrency of an exec tool", func(l *Lock) { l.Tools["read_file"].Runtime.Concurrency = 2 },
			[]string{`tool "read_file": runtime.concurrency is set on a tool of kind "exec" (only plugins have it)`}},
		{"cancel signal", func(l *Lock) {
			l.Tools["search_rg"].Describe.Runtime.Cancel = &protocol.Cancel{Signal: "SIGINT"}
		}, nil},
		{"cancel send", func(l *Lock) {
			l.Tools["search_rg"].Describe.Runtime.Cancel = &protocol.Cancel{Send: []byte(`{"stop":true}`)}
		}, nil},
		{"empty cancel", func(l *Lock) { l.Tools["search_rg"].Describe.Runtime.Cancel = &protocol.Cancel{} },
			[]string{`tool "search_rg": describe runtime.cancel must be a signal name or {"send": EVENT}`}},
		{"null capability", func(l *Lock) { l.Capabilities["c"] = nil }, []string{`capability "c" is null`}},
		{"capability without backends", func(l *Lock) { l.Capabilities["search"].Backends = nil },
			[]string{`capability "search": backends is empty`, `capability "search": active "search_rg" is not one of its backends`}},
		{"duplicate backend", func(l *Lock) { l.Capabilities["search"].Backends = []string{"search_rg", "search_rg"} },
			[]string{`capability "search": backend "search_rg" is listed twice`}},
		{"active outside backends", func(l *Lock) { l.Capabilities["search"].Active = "read_file" },
			[]string{`capability "search": active "read_file" is not one of its backends`}},
		{"no active backend", func(l *Lock) { l.Capabilities["search"].Active = "" }, nil},
		{"builtins unsorted and repeated", func(l *Lock) { l.Builtins = []string{"z", "a", "a"} },
			[]string{`builtins lists "a" twice`, `builtins is not sorted`}},
		{"builtin process without its resolution", func(l *Lock) { l.Process = nil },
			[]string{`builtins lists "process" but builtin_process is missing`}},
		{"builtin process resolved but not listed", func(l *Lock) { l.Builtins = nil },
			[]string{`builtin_process is set but builtins does not list "process"`}},
		{"builtin process unconfined", func(l *Lock) { l.Process = &ProcessBuiltin{Unconfined: true, Mechanism: "none"} }, nil},
		{"builtin process unconfined with a sandbox", func(l *Lock) { l.Process.Unconfined = true },
			[]string{`builtin_process: unconfined wants mechanism "none" and no sandbox`}},
		{"builtin process confined without a mechanism", func(l *Lock) { l.Process.Mechanism = "none" },
			[]string{`builtin_process: mechanism is "none"`}},
		{"builtin process confined without a sandbox", func(l *Lock) { l.Process.Sandbox = nil },
			[]string{`builtin_process: sandbox is missing`}},
		{"builtin process unknown net and tmp", func(l *Lock) { l.Process.Sandbox.Net, l.Process.Sandbox.Tmp = "", "disk" },
			[]string{`builtin_process: sandbox.net is ""`, `builtin_process: sandbox.tmp is "disk"`}},
		{"allowlist bad names", func(l *Lock) { l.EnvAllowlist = []string{"PATH", "", "A=B", "PATH"} },
			[]string{`env_allowlist holds an invalid name ""`, `env_allowlist holds an invalid name "A=B"`, `env_allowlist lists "PATH" twice`}},
		{"empty allowlist", func(l *Lock) { l.EnvAllowlist = []string{} }, nil},
		{"missing maps", func(l *Lock) { l.Tools, l.Capabilities = nil, nil },
			[]string{`tools is missing`, `capabilities is missing`}},
		{"wrong version", func(l *Lock) { l.Version = 0 }, []string{fmt.Sprintf("version is 0, want %d", FormatVersion)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLock()
			tc.edit(l)
			err := l.Validate()
			if tc.wants == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("Validate = %v, want *InvalidError", err)
			}
			for _, w := range tc.wants {
				if !slices.ContainsFunc(inv.Problems, func(p string) bool { return strings.HasPrefix(p, w) }) {
					t.Errorf("no problem starting with %q among:\n%s", w, strings.Join(inv.Problems, "\n"))
				}
			}
		})
	}
}

func TestInvalidErrorMessage(t *testing.T) {
	e := &InvalidError{Problems: []string{"a is wrong", "b is missing"}}
	if got, want := e.Error(), "invalid lock: a is wrong; b is missing"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
