package mcpnames

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

func TestMCPName(t *testing.T) {
	for in, want := range map[string]string{
		"read_file": "read_file",
		"kv.get":    "kv_get",
		"a-b.c d":   "a-b_c_d",
		"é":         "_",
	} {
		if got := MCPName(in); got != want {
			t.Errorf("MCPName(%q) = %q, want %q", in, got, want)
		}
	}
}

// lock is a lock of tools with the given describe documents (nil: a v1
// tool without args), probe ok. ToolNames reads nothing else.
func lock(tools map[string]*protocol.Describe) *manifest.Lock {
	l := manifest.New()
	for name, d := range tools {
		if d == nil {
			d = &protocol.Describe{Slug: name, Description: name, Args: []protocol.Arg{}}
		}
		l.Tools[name] = &manifest.Tool{Kind: manifest.KindExec, Describe: d, Probe: manifest.Probe{Status: manifest.StatusOK}}
	}
	return l
}

// service is a service tool's describe document; with input it reads
// jsonl events.
func service(name string, input bool) *protocol.Describe {
	d := &protocol.Describe{Protocol: 2, Slug: name, Description: name, Args: []protocol.Arg{}, Process: &protocol.Process{Mode: protocol.ProcessService}}
	if input {
		d.Process.Input = &protocol.Input{Framing: protocol.FramingJSONL, Event: json.RawMessage(`{"type":"object"}`)}
	}
	return d
}

func TestToolNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lock     *manifest.Lock
		builtins []string
		want     []string
	}{
		{"plain tools only", lock(map[string]*protocol.Describe{"a": nil, "b.c": nil}), nil, []string{"a", "b_c"}},
		{"a service with input", lock(map[string]*protocol.Describe{"w": service("w", true)}), nil, []string{"inbox", "processes", "w", "w_send"}},
		{"a service without input", lock(map[string]*protocol.Describe{"w": service("w", false)}), nil, []string{"inbox", "processes", "w"}},
		{"builtin process", lock(map[string]*protocol.Describe{"a": nil}), []string{BuiltinProcess}, []string{"a", "inbox", "process_kill", "process_run", "process_status", "processes"}},
		{"nil lock", nil, nil, []string{}},
	} {
		if tc.lock != nil {
			tc.lock.Builtins = tc.builtins
		}
		got, err := ToolNames(tc.lock)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ToolNames = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestToolNamesCollisions: names that collide once mapped, a tool that
// takes a built-in's name or a send companion's, and a name too long for
// strict clients are each one *NameError naming every source.
func TestToolNamesCollisions(t *testing.T) {
	long := strings.Repeat("x", 65)
	l := lock(map[string]*protocol.Describe{
		"watch": service("watch", true), "watch_send": nil, "inbox": nil,
		"kv_get": nil, "kv.get": nil, long: nil, "fine": nil,
	})
	names, err := ToolNames(l)
	for _, n := range []string{"fine", "watch", "watch_send", "inbox", "kv_get", "processes"} {
		if !slices.Contains(names, n) {
			t.Errorf("names %v lack %q", names, n)
		}
	}
	want := map[string][]string{
		"watch_send": {`the send companion of service "watch"`, `tool "watch_send"`},
		"inbox":      {"the built-in tool", `tool "inbox"`},
		"kv_get":     {`tool "kv.get"`, `tool "kv_get"`},
		long:         {`tool "` + long + `"`},
	}
	got := map[string][]string{}
	for _, e := range unjoin(err) {
		var ne *NameError
		if !errors.As(e, &ne) {
			t.Fatalf("error %v is not a *NameError", e)
		}
		got[ne.Name] = ne.Sources
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("collisions = %v, want %v", got, want)
	}
	if err != nil && !strings.Contains(err.Error(), `MCP tool name "kv_get" is claimed by tool "kv.get" and tool "kv_get"; rename`) {
		t.Errorf("error text = %v", err)
	}
}

// TestToolNamesSkipsHiddenAndBroken: a capability's backends are not
// served under their own names, and a tool whose describe failed at lock
// time (no describe document) is left out rather than breaking the list.
func TestToolNamesSkipsHiddenAndBroken(t *testing.T) {
	l := lock(map[string]*protocol.Describe{"one": nil, "inbox": nil})
	l.Capabilities["greet"] = &manifest.Capability{Backends: []string{"one", "inbox"}, Active: "one"}
	l.Tools["broken"] = &manifest.Tool{Kind: manifest.KindExec, Probe: manifest.Probe{Status: manifest.StatusFailed}}
	l.Builtins = []string{BuiltinProcess}
	names, err := ToolNames(l)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"greet", "inbox", "process_kill", "process_run", "process_status", "processes"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}
}

func TestPlanIsSortedAndTyped(t *testing.T) {
	l := lock(map[string]*protocol.Describe{"w": service("w", true), "a": nil})
	var got []string
	for _, sp := range Plan(l) {
		got = append(got, sp.Name)
		if sp.Kind == KindSend && (sp.Entry.Name != "w" || sp.Input == nil) {
			t.Errorf("send spec = %+v", sp)
		}
	}
	if want := []string{"a", "inbox", "processes", "w", "w_send"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Plan names = %v, want %v", got, want)
	}
}

// unjoin splits an errors.Join error.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// send = false (manifest.Tool.OmitSend) leaves the companion out: it is
// neither served nor claims its name, and a capability follows its
// active backend.
func TestOmitSend(t *testing.T) {
	l := lock(map[string]*protocol.Describe{"w": service("w", true), "v": service("v", true)})
	l.Tools["w"].OmitSend = true
	names, err := ToolNames(l)
	if err != nil || !slices.Equal(names, []string{"inbox", "processes", "v", "v_send", "w"}) {
		t.Errorf("names = %v, %v", names, err)
	}
	l.Tools["w_send"] = &manifest.Tool{Kind: manifest.KindExec, Describe: &protocol.Describe{Slug: "w_send", Description: "x", Args: []protocol.Arg{}}, Probe: manifest.Probe{Status: manifest.StatusOK}}
	if _, err := ToolNames(l); err != nil {
		t.Errorf("a tool named like the omitted companion: %v", err)
	}
	l.Capabilities["cap"] = &manifest.Capability{Backends: []string{"w"}, Active: "w"}
	if names, _ := ToolNames(l); slices.Contains(names, "cap_send") {
		t.Errorf("the capability of an omitted companion has one: %v", names)
	}
}

// ValidName is NamePattern, written out.
func TestValidNameIsNamePattern(t *testing.T) {
	re := regexp.MustCompile(NamePattern)
	for _, n := range []string{"", "a", "kv_get", "kv.get", "a-b_C9", "ü", "a b", "x\n", strings.Repeat("x", 64), strings.Repeat("x", 65), "/", ":", "@", "[", "`", "{"} {
		if got, want := ValidName(n), re.MatchString(n); got != want {
			t.Errorf("ValidName(%q) = %v, the pattern says %v", n, got, want)
		}
	}
	for c := range 256 {
		n := string([]byte{byte(c)})
		if got, want := ValidName(n), re.MatchString(n); got != want {
			t.Errorf("ValidName(%q) = %v, the pattern says %v", n, got, want)
		}
	}
}
