package mcpnames

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"toolbox/manifest"
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

// TestToolNamesCollisions: names that collide once mapped, a tool that
// takes a built-in's name or a send companion's, and a name too long for
// strict clients are each one *NameError naming every source.
func TestToolNamesCollisions(t *testing.T) {
	f := newFixture(t)
	f.addTool(t, "watch", serviceScript, serviceDescribe("watch"))
	f.addTool(t, "watch_send", `true`, nil)
	f.addTool(t, "inbox", `true`, nil)
	f.addTool(t, "kv_get", `true`, nil)
	f.addTool(t, "kv.get", `true`, nil)
	long := strings.Repeat("x", 65)
	f.addTool(t, long, `true`, nil)
	f.addTool(t, "fine", `true`, nil)

	names, err := ToolNames(f.lock)
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
	if err != nil && !strings.Contains(err.Error(), `MCP tool name "kv_get" is claimed by tool "kv.get" and tool "kv_get"`) {
		t.Errorf("error text = %v", err)
	}
}

// TestToolNamesSkipsHiddenAndBroken: a capability's backends are not
// served under their own names, and a tool whose describe failed at lock
// time (no describe document) is left out rather than breaking the list.
func TestToolNamesSkipsHiddenAndBroken(t *testing.T) {
	f := newFixture(t)
	f.addTool(t, "one", `true`, nil)
	f.addTool(t, "inbox", `true`, nil) // hidden behind the capability: no collision
	f.lock.Capabilities["greet"] = &manifest.Capability{Backends: []string{"one", "inbox"}, Active: "one"}
	f.lock.Tools["broken"] = &manifest.Tool{Kind: "exec", Path: "tools/broken", Probe: manifest.Probe{Status: manifest.StatusFailed}}
	f.lock.Builtins = []string{BuiltinProcess}
	names, err := ToolNames(f.lock)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"greet", "inbox", "process_kill", "process_run", "process_status", "processes"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}
}

// TestNewRefusesCollisions: the server is not built from a lock whose
// names collide (a lock written before the compiler checked them).
func TestNewRefusesCollisions(t *testing.T) {
	f := newFixture(t)
	f.addTool(t, "kv_get", `true`, nil)
	f.addTool(t, "kv.get", `true`, nil)
	_, err := New(Options{LockPath: f.lockPath, Lock: f.lock, Supervisor: nil})
	if err == nil {
		t.Fatal("New accepted a lock without a supervisor")
	}
	sup := newSupervisor(t, f)
	_, err = New(Options{LockPath: f.lockPath, Lock: f.lock, Supervisor: sup})
	var ne *NameError
	if !errors.As(err, &ne) || ne.Name != "kv_get" {
		t.Errorf("New: %v, want the kv_get collision", err)
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
