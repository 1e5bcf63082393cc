package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

// multiLock is smallLock plus a binary "multi" of n commands, locked as
// the compiler does: one tool per command, all sharing one Describe.
func multiLock(n int) *Lock {
	l := smallLock()
	d := &protocol.Describe{Protocol: 2, Slug: "multi", Description: "a tool of many commands", Args: []protocol.Arg{}}
	for i := range n {
		d.Commands = append(d.Commands, protocol.Command{
			Name: fmt.Sprintf("c%d", i), Description: fmt.Sprintf("command number %d does a thing", i),
			Args: []protocol.Arg{{Name: "path", Description: "a path", Type: "text", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional}},
		})
	}
	for _, c := range d.Commands {
		l.Tools["multi."+c.Name] = &Tool{
			Kind: "exec", Path: "tools/multi", SHA256: hashOf('c'), Platform: "linux/amd64", Protocol: 2,
			Command: c.Name, Binary: "multi", Describe: d,
			Bindings: map[string]*Binding{"path": {Value: []byte(`"/srv"`)}},
			Runtime:  Runtime{Mechanism: "none"}, Probe: Probe{Status: StatusOK},
		}
	}
	return l
}

// TestMultiCommandBinaryStoredOnce: a binary of N commands writes its
// describe document once, so the lock grows linearly in N (1000 commands
// made a 108 MB lock when each command's tool held the whole document);
// it reads back whole, the commands sharing one Describe.
func TestMultiCommandBinaryStoredOnce(t *testing.T) {
	data := mustMarshal(t, multiLock(3))
	if n := strings.Count(string(data), `"a tool of many commands"`); n != 1 {
		t.Errorf("the describe document is written %d times, want once:\n%s", n, data)
	}
	if n := strings.Count(string(data), `"command number 1 does a thing"`); n != 1 {
		t.Errorf("a command is written %d times, want once:\n%s", n, data)
	}
	for _, want := range []string{
		"\"binaries\": {\n    \"multi\": {\n      \"bindings\":",
		"\"multi.c1\": {\n      \"binary\": \"multi\",\n      \"command\": {\n        \"args\": [",
		"\"description\": \"command number 1 does a thing\",\n        \"name\": \"c1\"\n      }\n    },",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the lock lacks %q:\n%s", want, data)
		}
	}
	back, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	a, b := back.Tools["multi.c0"], back.Tools["multi.c2"]
	if a.Describe == nil || a.Describe != b.Describe || a.Command != "c0" || b.Binary != "multi" || a.SHA256 != hashOf('c') || string(b.Bindings["path"].Value) != `"/srv"` {
		t.Errorf("commands read back wrongly: %+v %+v", a, b)
	}
	if got := len(a.Describe.Commands); got != 3 || a.Describe.Commands[2].Description != "command number 2 does a thing" {
		t.Errorf("the shared describe document holds %d commands: %+v", got, a.Describe.Commands)
	}
	if again := mustMarshal(t, back); !bytes.Equal(again, data) {
		t.Errorf("re-marshal differs")
	}

	// Linear: each command adds about the same number of bytes whatever
	// N (one more digit in its names past 1000), where a lock holding the
	// document per command added ten times as many to a lock ten times as
	// big.
	size := func(n int) int { return len(mustMarshal(t, multiLock(n))) }
	per100, per1000 := size(200)-size(100), size(1100)-size(1000)
	if per1000 > per100*11/10 {
		t.Errorf("100 more commands add %d bytes to a lock of 100 and %d to one of 1000: not linear", per100, per1000)
	}
	t.Logf("a lock of 1000 commands is %d bytes", size(1000))
}

// TestMarshalRefusesCommandsThatDiffer: commands of one binary that differ
// in more than their command cannot be stored once, and are refused.
func TestMarshalRefusesCommandsThatDiffer(t *testing.T) {
	l := multiLock(2)
	l.Tools["multi.c1"].Probe.Status = StatusFailed
	_, err := Marshal(l)
	var inv *InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), `tools "multi.c0" and "multi.c1" are commands of binary "multi" but differ in more than their command`) {
		t.Fatalf("Marshal = %v", err)
	}
}

// TestUnmarshalStrictBinaries: a reference holds binary and command only
// and names a binary that is there; a binary is used and is no command.
func TestUnmarshalStrictBinaries(t *testing.T) {
	valid := string(mustMarshal(t, multiLock(2)))
	edit := func(old, new string) string {
		if !strings.Contains(valid, old) {
			t.Fatalf("test edit %q does not apply", old)
		}
		return strings.Replace(valid, old, new, 1)
	}
	ref := `"multi.c1": {
      "binary": "multi",`
	for _, tc := range []struct{ name, data, want string }{
		{"reference with more", edit(ref, ref+` "path": "tools/other",`), `tool "multi.c1": a command of binary "multi" holds only "binary" and "command"`},
		{"reference with describe", edit(ref, ref+` "describe": {"slug": "x", "description": "d", "args": []},`), `holds only "binary" and "command"`},
		{"unknown key in a reference", edit(ref, ref+` "colour": "red",`), `unknown field "colour"`},
		{"dangling binary", edit(ref, `"multi.c1": {
      "binary": "ghost",`), `tool "multi.c1": binary "ghost" is not in binaries`},
		{"unused binary", edit(`"binaries": {`, `"binaries": {"spare": {"kind": "exec", "path": "p", "sha256": "`+hashOf('d')+`", "platform": "linux/amd64", "protocol": 1, "runtime": {"mechanism": "none"}, "probe": {"status": "failed"}},`), `binary "spare" is the binary of no tool`},
		{"binary with a command", edit(`"multi": {
      "bindings"`, `"multi": {"command": "c0",
      "bindings"`), `unknown field "command"`},
		{"binary whose describe lists commands", edit(`"description": "a tool of many commands",`, `"description": "a tool of many commands", "commands": [],`), `binary "multi": its describe document lists no commands; each is in its tool`},
		{"command without binary", edit(ref, `"multi.c1": {`), `tool "multi.c1": a command names no binary`},
		{"command twice", edit(`"name": "c1"`, `"name": "c0"`), `tool "multi.c1": command "c0" of binary "multi" is tool "multi.c0" already`},
		{"binary without command", edit(`"command": {
        "args": [
          {
            "arity": "single",
            "backing_type": "string",
            "description": "a path",
            "mode": "positional",
            "name": "path",
            "type": "text"
          }
        ],
        "description": "command number 1 does a thing",
        "name": "c1"
      }`, `"command": null`), `tool "multi.c1": binary "multi" without a command`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Unmarshal([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Unmarshal = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDiffBinaryOnce: a change to a binary of 1000 commands is said once,
// for the binary.
func TestDiffBinaryOnce(t *testing.T) {
	a, b := multiLock(1000), multiLock(1000)
	d := b.Tools["multi.c0"].Describe
	d.Description = "changed"
	for _, t := range b.Tools {
		if t.Binary == "multi" {
			t.SHA256 = hashOf('e')
		}
	}
	got := Diff(a, b)
	want := []string{
		`binary "multi": binary changed (sha256 cccccccccccc -> eeeeeeeeeeee)`,
		`binary "multi": describe document changed: description changed: "a tool of many commands" -> "changed"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	delete(b.Tools, "multi.c5")
	if got := Diff(a, b); len(got) != 3 || got[0] != `tool "multi.c5": removed` {
		t.Errorf("Diff after removing a command: %q", got)
	}
}

// BenchmarkUnmarshal1000Commands: what reading the lock of a binary of
// 1000 commands costs every `toolbox run` (compare BenchmarkUnmarshal1Command).
func BenchmarkUnmarshal1000Commands(b *testing.B) { benchUnmarshal(b, 1000) }

func BenchmarkUnmarshal1Command(b *testing.B) { benchUnmarshal(b, 1) }

func benchUnmarshal(b *testing.B, n int) {
	data := mustMarshal(b, multiLock(n))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}
