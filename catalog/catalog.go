// Package catalog says what a model sees of a locked toolbox: one entry per
// capability (served by its active backend) and per tool that no capability
// hides, each with its description and the JSON Schema of its arguments.
// It reads only the lock; it runs nothing and parses no HCL.
package catalog

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
)

// Entry kinds. A model sees capabilities and tools; backends (tools that
// serve a capability, hidden from the model) are listed only on request
// (Backends).
const (
	KindCapability = "capability"
	KindTool       = "tool"
	KindBackend    = "backend"
)

// StrictName is the name a strict client gets for a lock name: every rune
// outside [a-zA-Z0-9_-] becomes '_' ("git_history.log" -> "git_history_log"),
// what MCP clients and most model APIs accept. Collisions are refused at
// lock time (mcpnames.ToolNames); `toolbox run` accepts either name.
func StrictName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

// Entry is one callable name.
type Entry struct {
	// Name is the lock's name (a tool, "tool.command" or a capability).
	Name string `json:"name"`
	// ModelName is StrictName(Name): what a model is given.
	ModelName string `json:"model_name"`
	// Kind is KindCapability or KindTool.
	Kind        string `json:"kind"`
	Description string `json:"description"`
	// Backend is the tool that serves the entry (the active backend of a
	// capability, the tool itself otherwise).
	Backend string `json:"backend"`
	// InputSchema is the JSON Schema of the arguments (protocol.InputSchema).
	InputSchema map[string]any `json:"input_schema"`
	// Mode is the process mode of the backend: oneshot, stream or service.
	Mode string `json:"mode"`
	// Status is the backend's probe status.
	Status string `json:"status"`
	// Send is the service's send companion, a tool of its own for the
	// model; nil when the entry has none (not a service reading events)
	// or the operator left it out (send = false).
	Send *SendTool `json:"send,omitempty"`
	// Capabilities are the capabilities a KindBackend entry serves, sorted;
	// empty for the others.
	Capabilities []string `json:"capabilities,omitempty"`
}

// Build lists the entries of l sorted by name, and a warning for every
// capability left out because it has no active backend.
func Build(l *manifest.Lock) ([]Entry, []string) {
	var out []Entry
	var warnings []string
	hidden := map[string]bool{}
	for _, name := range sortedKeys(l.Capabilities) {
		c := l.Capabilities[name]
		for _, b := range c.Backends {
			hidden[b] = true
		}
		t := l.Tools[c.Active]
		if c.Active == "" || !t.Callable() {
			warnings = append(warnings, fmt.Sprintf("capability %q has no active backend and is left out; run `toolbox check --probe` for the reasons", name))
			continue
		}
		e := entry(name, c.Active, t)
		e.Kind = KindCapability
		if c.Description != "" {
			e.Description = c.Description
		}
		out = append(out, e)
	}
	for _, name := range sortedKeys(l.Tools) {
		if hidden[name] || !l.Tools[name].Callable() {
			continue // hidden behind a capability, or a failed probe
		}
		out = append(out, entry(name, name, l.Tools[name]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, warnings
}

// Backends lists, sorted by name, the tools of l that Build hides because
// capabilities serve them: what `toolbox run NAME` and --backend still
// accept. Each is a KindBackend entry naming its capabilities. A tool
// without a describe document (a failed probe) is left out, as in Build.
func Backends(l *manifest.Lock) []Entry {
	serves := map[string][]string{}
	for _, c := range sortedKeys(l.Capabilities) {
		if cp := l.Capabilities[c]; cp != nil {
			for _, b := range cp.Backends {
				serves[b] = append(serves[b], c)
			}
		}
	}
	var out []Entry
	for _, name := range sortedKeys(serves) {
		t := l.Tools[name]
		if !t.Callable() {
			continue
		}
		e := entry(name, name, t)
		e.Kind, e.Capabilities = KindBackend, serves[name]
		out = append(out, e)
	}
	return out
}

func entry(name, backend string, t *manifest.Tool) Entry {
	if t.Kind == manifest.KindMCP {
		return mcpEntry(name, backend, t)
	}
	d := t.Describe
	mode := "oneshot"
	if d.Process != nil && d.Process.Mode != "" {
		mode = d.Process.Mode
	}
	desc := d.Description
	for _, c := range d.Commands {
		if c.Name == t.Command {
			desc = c.Description
		}
	}
	return Entry{
		Name:        name,
		ModelName:   StrictName(name),
		Kind:        KindTool,
		Description: desc,
		Backend:     backend,
		InputSchema: InputSchemaOf(t), // bound args are the operator's: not shown
		Mode:        mode,
		Status:      t.Probe.Status,
		Send:        sendTool(name, t),
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
