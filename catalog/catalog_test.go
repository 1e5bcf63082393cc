package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

func tool(desc string, args ...protocol.Arg) *manifest.Tool {
	return &manifest.Tool{Kind: manifest.KindExec, Describe: &protocol.Describe{Description: desc, Args: args}, Probe: manifest.Probe{Status: manifest.StatusOK}}
}

func TestBuild(t *testing.T) {
	pattern := protocol.Arg{Name: "pattern", Description: "p", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional}
	key := protocol.Arg{Name: "key", Description: "k", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModeEnv}
	multi := tool("kv")
	multi.Describe.Commands = []protocol.Command{{Name: "get", Description: "read a key", Args: []protocol.Arg{pattern}}}
	multi.Command = "get"
	bound := tool("api", pattern, key)
	bound.Bindings = map[string]*manifest.Binding{"key": {Env: "K", Secret: true}}
	l := &manifest.Lock{
		Tools: map[string]*manifest.Tool{"rg": tool("ripgrep", pattern), "grep": tool("grep", pattern), "kv.get": multi, "api": bound},
		Capabilities: map[string]*manifest.Capability{
			"search": {Backends: []string{"rg", "grep"}, Active: "grep", Description: "Search"},
			"none":   {Backends: []string{"rg"}},
		},
	}
	entries, warnings := Build(l)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name+"/"+e.Kind+"/"+e.Backend)
	}
	if got := strings.Join(names, " "); got != "api/tool/api kv.get/tool/kv.get search/capability/grep" {
		t.Errorf("entries: %s", got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `capability "none" has no active backend`) {
		t.Errorf("warnings: %q", warnings)
	}
	schema, _ := json.Marshal(entries[0].InputSchema)
	if strings.Contains(string(schema), `"key"`) || !strings.Contains(string(schema), `"pattern"`) {
		t.Errorf("bound arg in the schema: %s", schema)
	}
	if entries[1].Description != "read a key" || entries[2].Description != "Search" {
		t.Errorf("descriptions: %q, %q", entries[1].Description, entries[2].Description)
	}
}

// A service that reads events has a send companion in the catalog, unless
// the operator left it out (send = false).
func TestSendCompanion(t *testing.T) {
	svc := func(omit bool) *manifest.Tool {
		m := tool("svc")
		m.Describe.Protocol = 2
		m.Describe.Process = &protocol.Process{Mode: protocol.ProcessService, Input: &protocol.Input{Framing: protocol.FramingJSONL, Event: json.RawMessage(`{"type":"object"}`)}}
		m.OmitSend = omit
		return m
	}
	l := &manifest.Lock{Tools: map[string]*manifest.Tool{"chat": svc(false), "watch": svc(true), "c": tool("oneshot")}}
	entries, _ := Build(l)
	for _, e := range entries {
		switch {
		case e.Name == "chat" && (e.Send == nil || e.Send.ModelName != "chat_send" || e.Send.InputSchema["required"] == nil):
			t.Errorf("chat's companion = %+v", e.Send)
		case e.Name != "chat" && e.Send != nil:
			t.Errorf("%s has a companion: %+v", e.Name, e.Send)
		}
	}
}

// TestBackends: the tools capabilities hide, each naming the capabilities
// it serves; a tool that serves none is not one.
func TestBackends(t *testing.T) {
	l := manifest.New()
	d := &protocol.Describe{Slug: "x", Description: "X", Args: []protocol.Arg{}}
	for _, n := range []string{"a", "b", "solo"} {
		l.Tools[n] = &manifest.Tool{Kind: manifest.KindExec, Describe: d, Probe: manifest.Probe{Status: manifest.StatusOK}}
	}
	l.Tools["failed"] = &manifest.Tool{Kind: manifest.KindExec, Probe: manifest.Probe{Status: manifest.StatusFailed}}
	l.Capabilities["one"] = &manifest.Capability{Backends: []string{"b", "a", "failed"}, Active: "b"}
	l.Capabilities["two"] = &manifest.Capability{Backends: []string{"a"}, Active: "a"}
	got := Backends(l)
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("Backends = %+v", got)
	}
	if got[0].Kind != KindBackend || strings.Join(got[0].Capabilities, ",") != "one,two" || strings.Join(got[1].Capabilities, ",") != "one" {
		t.Errorf("entries = %+v", got)
	}
}
