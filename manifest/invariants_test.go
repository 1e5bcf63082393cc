package manifest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

// A lock rewritten by someone other than the compiler (issue 10 #2: a tool
// that could write it set mechanism none and dropped run_as, and `toolbox
// check` still agreed) breaks an invariant only the compiler keeps, and
// Unmarshal refuses the whole lock. Each case is a tampering; the twins
// are the legitimate locks next to it.
func TestTamperedLockIsRefused(t *testing.T) {
	rg := func(l *Lock) *Tool { return l.Tools["search_rg"] }
	for _, tc := range []struct {
		name string
		edit func(l *Lock)
		want string // "" = valid (a positive twin)
	}{
		{"sandboxed tool unconfined", func(l *Lock) { rg(l).Runtime.Mechanism = "none"; l.Bwrap = nil },
			`tool "search_rg": runtime.mechanism is "none", which sandbox "auto" cannot choose for a tool that declares runtime.sandbox`},
		{"run_as only, unconfined", func(l *Lock) {
			rg(l).Describe.Runtime.Sandbox = nil
			rg(l).Runtime.Paths = nil
			rg(l).Runtime.Mechanism = "none"
			l.Bwrap = nil
		}, `tool "search_rg": runtime.mechanism is "none", which sandbox "auto" cannot choose for a tool that declares runtime.run_as`},
		{"mechanism the setting cannot choose", func(l *Lock) { l.Sandbox = "landlock" },
			`tool "search_rg": runtime.mechanism is "bwrap", which sandbox "landlock" cannot choose`},
		{"sandbox none with a sandboxed tool", func(l *Lock) { l.Sandbox = "none" },
			`tool "search_rg": runtime.mechanism is "bwrap", which sandbox "none" cannot choose`},
		{"bwrap setting twin", func(l *Lock) { l.Sandbox = "bwrap" }, ""},
		{"landlock cannot cut the network", func(l *Lock) { rg(l).Runtime.Mechanism = "landlock"; l.Bwrap = nil },
			`tool "search_rg": runtime.mechanism is "landlock", which cannot honour net: none`},
		{"landlock twin with net host", func(l *Lock) {
			rg(l).Runtime.Mechanism = "landlock"
			rg(l).Describe.Runtime.Sandbox.Net = "host"
			l.Process.Mechanism, l.Process.Sandbox.Net = "landlock", "host"
			l.Bwrap = nil
		}, ""},
		{"landlock private tmp", func(l *Lock) {
			rg(l).Runtime.Mechanism = "landlock"
			rg(l).Describe.Runtime.Sandbox.Net = "host"
			rg(l).Describe.Runtime.Sandbox.Tmp = "private"
			l.Bwrap = nil
		}, `tool "search_rg": runtime.mechanism is "landlock", which cannot honour tmp: private`},
		{"run_as dropped", func(l *Lock) { rg(l).Runtime.RunAs = nil },
			`tool "search_rg": the describe document declares run_as but runtime.run_as is missing`},
		{"run_as added", func(l *Lock) { l.Tools["read_file"].Runtime.RunAs = &Identity{User: "root"} },
			`tool "read_file": runtime.run_as is set but the describe document declares no run_as`},
		{"mechanism without a declaration", func(l *Lock) { l.Tools["read_file"].Runtime.Mechanism = "landlock" },
			`tool "read_file": runtime.mechanism is "landlock" but the tool declares neither runtime.sandbox nor runtime.run_as`},
		{"declared path not resolved", func(l *Lock) {
			rg(l).Describe.Runtime.Sandbox.FS.Write = []string{"/data"}
		}, `tool "search_rg": runtime.paths lacks the lock-time resolution of declared path "/data"`},
		{"declared path resolved", func(l *Lock) {
			rg(l).Describe.Runtime.Sandbox.FS.Write = []string{"/data"}
			rg(l).Runtime.Paths["/data"] = "/srv/data"
		}, ""},
		{"undeclared resolution", func(l *Lock) { rg(l).Runtime.Paths["/root"] = "/root" },
			`tool "search_rg": runtime.paths holds "/root", which the describe document does not declare`},
		{"bwrap not pinned", func(l *Lock) { l.Bwrap = nil },
			`bwrap is missing: a tool, an mcp server or the builtin "process" is locked with mechanism "bwrap"`},
		{"bwrap pinned for nothing", func(l *Lock) {
			rg(l).Runtime.Mechanism = "landlock"
			rg(l).Describe.Runtime.Sandbox.Net = "host"
			l.Process.Mechanism, l.Process.Sandbox.Net = "landlock", "host"
		}, `bwrap is pinned but neither a tool, an mcp server nor the builtin "process" is locked with mechanism "bwrap"`},
		{"bwrap pinned by a relative path", func(l *Lock) { l.Bwrap.Path = "evil/bwrap" },
			`bwrap.path is "evil/bwrap", want an absolute, clean path`},
		{"bwrap hash", func(l *Lock) { l.Bwrap.SHA256 = "x" }, `bwrap.sha256 is "x"`},
		{"builtin under landlock with net none", func(l *Lock) { l.Process.Mechanism, l.Process.Sandbox.Net = "landlock", "none" },
			`builtin_process: mechanism is "landlock", which cannot honour net: none`},
		{"builtin under a mechanism the setting cannot choose", func(l *Lock) {
			l.Sandbox = "bwrap"
			l.Process.Mechanism, l.Process.Sandbox.Net = "landlock", "host"
		}, `builtin_process: mechanism is "landlock", which sandbox "bwrap" cannot choose for a confined builtin`},
		{"plugin sandboxed twin", func(l *Lock) {
			g := l.Tools["search_grep"]
			g.Describe.Protocol, g.Protocol = 2, 2
			g.Describe.Runtime = &protocol.Runtime{Sandbox: &protocol.Sandbox{}}
			g.Runtime.Mechanism = "landlock"
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLock()
			tc.edit(l)
			wantLockProblem(t, l, tc.want)
		})
	}
}

// wantLockProblem encodes l without Marshal's validation, as a tool that
// rewrote the file would, and checks that Unmarshal refuses it with a
// problem starting with want, or accepts it when want is "".
func wantLockProblem(t *testing.T, l *Lock, want string) {
	t.Helper()
	w, problems := toWire(normalized(l))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	data, encErr := encodeCanonical(w)
	if encErr != nil {
		t.Fatal(encErr)
	}
	_, err := Unmarshal(data)
	if want == "" {
		if err != nil {
			t.Fatalf("a legitimate lock is refused: %v", err)
		}
		return
	}
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Unmarshal = %v, want *InvalidError", err)
	}
	if !slices.ContainsFunc(inv.Problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
		t.Fatalf("no problem starting with %q among:\n%s", want, strings.Join(inv.Problems, "\n"))
	}
}

// An upgraded bubblewrap is drift that `toolbox lock --check` names.
func TestDiffNamesChangedBwrap(t *testing.T) {
	a, b := testLock(), testLock()
	b.Bwrap.SHA256 = hashOf('f')
	got := Diff(a, b)
	if len(got) != 1 || !strings.Contains(got[0], "/usr/bin/bwrap changed") || !strings.Contains(got[0], "upgraded or replaced") {
		t.Fatalf("Diff = %q", got)
	}
	b = testLock()
	b.Tools["search_rg"].Runtime.Paths["."] = "elsewhere"
	if got := Diff(a, b); len(got) != 1 || !strings.Contains(got[0], "resolved sandbox paths changed") {
		t.Fatalf("Diff = %q", got)
	}
}
