package manifest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(l *Lock)
		want []string
	}{
		{"equal", func(l *Lock) {}, nil},
		{"toolbox file bytes", func(l *Lock) { l.File.SHA256 = hashOf('e') },
			[]string{"toolbox file bytes changed, not its configuration (sha256 aaaaaaaaaaaa -> eeeeeeeeeeee)"}},
		{"toolbox file configuration", func(l *Lock) { l.File.SHA256, l.File.Config = hashOf('e'), hashOf('9') },
			[]string{"toolbox file configuration changed (sha256 ffffffffffff -> 999999999999)"}},
		{"top level", func(l *Lock) {
			l.Sandbox = "bwrap"
			l.EnvdirRoot = "/etc/toolbox/env"
			l.EnvAllowlist = []string{}
			l.Builtins = nil
		}, []string{
			`sandbox: "auto" -> "bwrap"`,
			`envdir_root: "env" -> "/etc/toolbox/env"`,
			`env_allowlist: (unset) -> []`,
			`builtins: ["process"] -> (unset)`,
		}},
		{"builtin process", func(l *Lock) { l.Process = &ProcessBuiltin{Unconfined: true, Mechanism: "none"} },
			[]string{`builtin "process": bwrap {"fs":{"read":["."],"write":["out"]},"net":"none","tmp":"shared"} -> unconfined`}},
		{"tool added and removed", func(l *Lock) {
			l.Tools["zz"] = l.Tools["read_file"]
			delete(l.Tools, "read_file")
		}, []string{`tool "read_file": removed`, `tool "zz": added`}},
		{"tool fields", func(l *Lock) {
			tl := l.Tools["read_file"]
			tl.SHA256 = hashOf('0')
			tl.Platform = "linux/arm64"
			tl.Protocol = 2
			tl.Kind = "plugin"
			tl.Path = "bin/read_file"
		}, []string{
			`tool "read_file": kind "exec" -> "plugin"`,
			`tool "read_file": path "tools/read_file" -> "bin/read_file"`,
			`tool "read_file": binary changed (sha256 bbbbbbbbbbbb -> 000000000000)`,
			`tool "read_file": platform "linux/amd64" -> "linux/arm64"`,
			`tool "read_file": protocol 1 -> 2`,
		}},
		{"describe", func(l *Lock) { l.Tools["read_file"].Describe.Args[0].Description = "a file" },
			[]string{`tool "read_file": describe document changed: args[0].description changed: "the file" -> "a file"`}},
		{"describe event schema", func(l *Lock) {
			l.Tools["search_rg"].Describe.Process.Output.Event = []byte(`{"type":"array"}`)
		}, []string{`tool "search_rg": describe document changed: process.output.event.properties removed (was {"a":{"maximum":1.50,"type":"integer"},"z":{"type":"string"}}); process.output.event.type changed: "object" -> "array"`}},
		{"describe, several places", func(l *Lock) {
			d := l.Tools["read_file"].Describe
			d.Description = "new"
			d.Slug = "rf"
		}, []string{`tool "read_file": describe document changed: description changed: "Read a file <with> & ranges." -> "new"; slug changed: "read_file" -> "rf"`}},

		{"runtime", func(l *Lock) {
			r := &l.Tools["search_rg"].Runtime
			r.Mechanism = "landlock"
			r.RunAs = nil
			r.Envdir = ""
			r.Rundir = "run/x"
			r.TimeoutSeconds = 1.5
		}, []string{
			`tool "search_rg": runtime mechanism "bwrap" -> "landlock"`,
			`tool "search_rg": runtime run_as "nobody" (uid 65534, gid 65534, groups [65534]) -> (caller)`,
			`tool "search_rg": runtime envdir "env/search_rg" -> ""`,
			`tool "search_rg": runtime rundir "run/search" -> "run/x"`,
			`tool "search_rg": timeout 30s -> 1.5s`,
		}},
		{"probe", func(l *Lock) {
			l.Tools["search_rg"].Probe = Probe{Status: StatusFailed, Detail: "rg: not found", Fix: "install ripgrep"}
			l.Capabilities["search"].Active = ""
		}, []string{
			`tool "search_rg": its check reports this machine differently (status "ok" -> "failed", detail "ripgrep 14" -> "rg: not found", fix "" -> "install ripgrep"): a program it uses differs from the locking machine's; install the same version here, or lock on this machine`,
			`capability "search": active "search_rg" -> ""`,
		}},
		{"capability", func(l *Lock) {
			c := l.Capabilities["search"]
			c.Backends = []string{"search_grep", "search_rg"}
			c.Required = false
			c.Description = "Find."
			l.Capabilities["read"] = &Capability{Backends: []string{"read_file"}}
		}, []string{
			`capability "read": added`,
			`capability "search": description "Search the code." -> "Find."`,
			`capability "search": backends ["search_rg" "search_grep"] -> ["search_grep" "search_rg"]`,
			`capability "search": required true -> false`,
		}},
		{"header only", func(l *Lock) { l.Header = "edited" },
			[]string{"lock content differs (run toolbox lock to rewrite it)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := testLock()
			tc.edit(next)
			got := Diff(testLock(), next)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// Determinism: the same inputs, the same lines.
			if again := Diff(testLock(), next); !reflect.DeepEqual(got, again) {
				t.Errorf("Diff is not deterministic")
			}
		})
	}
}

// A plugin whose binary changed gets the hint that a Go build is only
// reproducible with -trimpath (a clone at another path differs without).
func TestDiffPluginBinary(t *testing.T) {
	prev, next := testLock(), testLock()
	prev.Tools["read_file"].Kind, next.Tools["read_file"].Kind = KindPlugin, KindPlugin
	next.Tools["read_file"].SHA256 = hashOf('0')
	got := Diff(prev, next)
	if len(got) != 1 || !strings.HasPrefix(got[0], `tool "read_file": binary changed (sha256 bbbbbbbbbbbb -> 000000000000); `) || !strings.Contains(got[0], "go build -trimpath") {
		t.Errorf("Diff = %q, want the binary change with the -trimpath hint", got)
	}
}

func TestDiffNil(t *testing.T) {
	if got := Diff(nil, testLock()); !reflect.DeepEqual(got, []string{"no lock file"}) {
		t.Errorf("Diff(nil, l) = %q", got)
	}
	if got := Diff(testLock(), nil); !reflect.DeepEqual(got, []string{"lock removed"}) {
		t.Errorf("Diff(l, nil) = %q", got)
	}
	if got := Diff(nil, nil); got != nil {
		t.Errorf("Diff(nil, nil) = %q", got)
	}
}

// Diff is empty exactly when the canonical bytes are equal, including when
// maps were filled in another order or the describe document differs only
// in layout.
func TestDiffEmptyForEqualLocks(t *testing.T) {
	a, b := testLock(), testLock()
	b.Tools["search_rg"].Describe.Process.Output.Event = []byte(`{
		"properties": {"a": {"maximum": 1.50, "type": "integer"}, "z": {"type": "string"}},
		"type": "object"}`)
	b.Tools["x"] = &Tool{Kind: "exec", Path: "x", SHA256: hashOf('9'), Platform: "linux/amd64", Protocol: 1,
		Describe: &protocol.Describe{Slug: "x", Args: []protocol.Arg{}}, Runtime: Runtime{Mechanism: "none"},
		Probe: Probe{Status: StatusOK}}
	a.Tools["x"] = b.Tools["x"]
	if got := Diff(a, b); got != nil {
		t.Errorf("Diff of equal locks = %q", got)
	}
}
