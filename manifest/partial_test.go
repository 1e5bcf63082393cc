package manifest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeLockFile(t testing.TB, l *Lock) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolbox.lock.json")
	if err := Write(path, l); err != nil {
		t.Fatal(err)
	}
	return path
}

func exactly(name string) func(string) bool { return func(n string) bool { return n == name } }

// TestReadCall: a call reads what it may run, decoded as Read decodes it,
// and nothing else.
func TestReadCall(t *testing.T) {
	l := multiLock(50)
	l.Tools["read_file"] = testLock().Tools["read_file"]
	path := writeLockFile(t, l)
	full, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}

	// One command of a binary: that tool and its binary, with only its
	// command in its describe document.
	part, err := ReadCall(path, exactly("multi.c7"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := part.Tools["multi.c7"]
	if len(part.Tools) != 1 || got == nil || len(part.Capabilities) != 0 {
		t.Fatalf("ReadCall kept tools %v, capabilities %v", keys(part.Tools), keys(part.Capabilities))
	}
	want := *full.Tools["multi.c7"]
	if got.Describe.Commands[0].Name != "c7" || len(got.Describe.Commands) != 1 {
		t.Errorf("the command's describe holds %+v", got.Describe.Commands)
	}
	wantArgs, _ := want.Describe.CommandArgs("c7")
	gotArgs, _ := got.Describe.CommandArgs("c7")
	got.Describe, want.Describe = nil, nil
	if !reflect.DeepEqual(*got, want) || !reflect.DeepEqual(gotArgs, wantArgs) {
		t.Errorf("ReadCall's tool differs from Read's:\n%+v\n%+v", *got, want)
	}

	// A capability: it and its backends; an override names one more tool.
	part, err = ReadCall(path, exactly("say"), []string{"read_file"})
	if err != nil {
		t.Fatal(err)
	}
	if k := keys(part.Tools); strings.Join(k, ",") != "echo,read_file" || part.Capabilities["say"] == nil || part.File != full.File || part.Sandbox != full.Sandbox {
		t.Errorf("ReadCall(say) kept tools %v and %+v", k, part)
	}

	// An unknown name reads no tool: the caller's refusal says so.
	if part, err := ReadCall(path, exactly("ghost"), nil); err != nil || len(part.Tools) != 0 {
		t.Errorf("ReadCall(ghost) = %v, %v", part, err)
	}
}

// TestReadCallStrict: what a call reads is as strict as Read; a lock that
// is not an object of objects gets Read's error.
// TestReadCallNamesEveryBinary: a partial lock still names the binaries it
// left out (Lock.OtherPaths), so a call's sandbox protects every binary a
// later run trusts, not only its own (found in review: `toolbox run a`
// left tools/b writable to a tool whose grant covered it).
func TestReadCallNamesEveryBinary(t *testing.T) {
	l := multiLock(3)
	l.Tools["read_file"] = testLock().Tools["read_file"]
	path := writeLockFile(t, l)
	full, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]bool{}
	for _, tl := range full.Tools {
		all[tl.Path] = true
	}
	part, err := ReadCall(path, exactly("read_file"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range part.OtherPaths {
		got[p] = true
	}
	for _, tl := range part.Tools {
		got[tl.Path] = true
	}
	if !reflect.DeepEqual(got, all) {
		t.Errorf("a partial lock names binaries %v, want every one of %v", keys(got), keys(all))
	}
	if full.OtherPaths != nil {
		t.Errorf("a whole lock has OtherPaths %v", full.OtherPaths)
	}
}

func TestReadCallStrict(t *testing.T) {
	path := writeLockFile(t, multiLock(3))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"unknown key in the tool", `"binary": "multi",`, `"binary": "multi", "extra": 1,`, `unknown field "extra"`},
		{"unknown top-level key", `"sandbox"`, `"colour": "red", "sandbox"`, `unknown field "colour"`},
		{"version", versionKey(FormatVersion), versionKey(99), "lock format version is 99"},
		{"cut short", "\n}\n", "", "decoding lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(data), tc.old, tc.new, 1)
			if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadCall(path, exactly("multi.c0"), nil); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadCall = %v, want %q", err, tc.want)
			}
		})
	}
}

func keys[V any](m map[string]V) []string { return sortedKeys(m) }

// BenchmarkReadCall1000Commands and BenchmarkReadCall1Command: what a run
// pays to read its lock, for one command of a binary of 1000 commands and
// of a binary of one (compare BenchmarkUnmarshal1000Commands: the whole lock).
func BenchmarkReadCall1000Commands(b *testing.B) { benchReadCall(b, 1000) }

func BenchmarkReadCall1Command(b *testing.B) { benchReadCall(b, 1) }

func benchReadCall(b *testing.B, n int) {
	path := writeLockFile(b, multiLock(n))
	for b.Loop() {
		if _, err := ReadCall(path, exactly("multi.c0"), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadCallMCP: a call of one tool of an MCP server reads every tool of
// that server (the call verifies the server's whole listing against their
// pins), and no tool of another.
func TestReadCallMCP(t *testing.T) {
	l := mcpLock(t)
	other := *l.Tools["fake_echo"]
	pin := *other.MCP
	pin.Name = "echo2"
	other.MCP = &pin
	l.Tools["fake_echo2"] = &other
	path := writeLockFile(t, l)
	part, err := ReadCall(path, exactly("fake_echo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if k := strings.Join(keys(part.Tools), ","); k != "fake_echo,fake_echo2" || part.MCPServers["fake"] == nil {
		t.Errorf("ReadCall(fake_echo) kept tools %s and servers %v", k, keys(part.MCPServers))
	}
	part, err = ReadCall(path, exactly("read_file"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if k := strings.Join(keys(part.Tools), ","); k != "read_file" {
		t.Errorf("ReadCall(read_file) kept tools %s", k)
	}
}
