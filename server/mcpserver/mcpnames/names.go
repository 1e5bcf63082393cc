// Package mcpnames says which MCP tools the server of a lock serves and
// under which names (DESIGN.md §7, NOTES.md "MCP"), without starting
// anything: the compiler calls ToolNames at lock time to refuse names that
// collide once mapped for strict clients, and package mcpserver builds its
// tools from Plan. It imports only catalog, manifest and protocol, so the
// compiler can use it without linking the launcher or the MCP SDK.
package mcpnames

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/toolbox-dev/toolbox/catalog"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// Names of the built-in tools. ProcessesTool and InboxTool are served when
// the lock has a service (a catalog entry whose backend is a service) or
// declares builtin "process"; the Command* tools only with builtin
// "process" (DESIGN.md §5).
const (
	ProcessesTool     = "processes"
	InboxTool         = "inbox"
	CommandRunTool    = "process_run"
	CommandStatusTool = "process_status"
	CommandKillTool   = "process_kill"
	// SendSuffix makes a service's send companion: "<name>_send" (the v2
	// spec's T.send, mapped for strict clients; catalog.SendSuffix).
	SendSuffix = catalog.SendSuffix
)

// BuiltinProcess is the builtin that enables background commands.
const BuiltinProcess = "process"

// NamePattern is what strict MCP clients accept as a tool name (NOTES.md),
// as a regular expression; ValidName checks it.
const NamePattern = `^[a-zA-Z0-9_-]{1,64}$`

// ValidName reports whether name matches NamePattern. It is written out
// rather than compiled from the pattern: compiling the counted repetition
// cost every toolbox process (the landlock helper included) 0.2 ms at
// start (issue 13).
func ValidName(name string) bool {
	if len(name) < 1 || len(name) > 64 {
		return false
	}
	for i := range len(name) {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// MCPName maps a lock name (a tool, a capability, "tool.command") to the
// name MCP clients see: every character outside [a-zA-Z0-9_-] becomes "_",
// so "kv.get" is "kv_get". The result may still be too long; ToolNames
// says so.
func MCPName(name string) string { return catalog.StrictName(name) }

// NameError is an MCP tool name that cannot be served: several sources map
// to it (Sources has them all), or it does not match NamePattern (too long
// or empty; Sources has the one source).
type NameError struct {
	// Name is the MCP name.
	Name string
	// Sources say what maps to Name, e.g. `tool "kv.get"`, `capability
	// "lookup"`, `the send companion of service "watch"`, `the built-in
	// tool`.
	Sources []string
}

// Error names the MCP name, its sources and the fix.
func (e *NameError) Error() string {
	if len(e.Sources) > 1 {
		return fmt.Sprintf("MCP tool name %q is claimed by %s; rename a tool, a capability or a command", e.Name, strings.Join(e.Sources, " and "))
	}
	return fmt.Sprintf("MCP tool name %q of %s does not match %s; shorten the name", e.Name, strings.Join(e.Sources, ""), NamePattern)
}

// ToolNames returns, sorted, every tool name the MCP server of l serves:
// each catalog entry (MCPName of its name), each service's send companion
// (unless the operator left it out: manifest.Tool.OmitSend), and the
// built-in tools the lock enables. It starts nothing
// and reads only l, so the compiler can call it at lock time. The error
// joins one *NameError per name that collides or is invalid; the names
// are returned either way.
func ToolNames(l *manifest.Lock) ([]string, error) {
	owners := map[string][]string{}
	for _, sp := range plan(l) {
		owners[sp.Name] = append(owners[sp.Name], sp.Source)
	}
	names := make([]string, 0, len(owners))
	for n := range owners {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if src := owners[n]; len(src) > 1 || !ValidName(n) {
			sort.Strings(src)
			errs = append(errs, &NameError{Name: n, Sources: src})
		}
	}
	return names, errors.Join(errs...)
}

// Kind says what serves an MCP tool.
type Kind int

// The kinds of MCP tools.
const (
	KindEntry         Kind = iota // a catalog entry (a capability or a tool)
	KindSend                      // a service's send companion
	KindProcesses                 // ProcessesTool
	KindInbox                     // InboxTool
	KindCommandRun                // CommandRunTool
	KindCommandStatus             // CommandStatusTool
	KindCommandKill               // CommandKillTool
)

// Spec is one MCP tool of a lock.
type Spec struct {
	// Name is the MCP name.
	Name string
	// Source says what the tool comes from, as NameError.Sources does.
	Source string
	Kind   Kind
	// Entry is the catalog entry (KindEntry), or the service entry whose
	// companion it is (KindSend).
	Entry catalog.Entry
	// Input is the service's declared process.input (KindSend).
	Input *protocol.Input
}

// Plan lists the MCP tools of l, sorted by name, collisions included (see
// ToolNames). A nil lock has none.
func Plan(l *manifest.Lock) []Spec {
	specs := plan(l)
	sort.SliceStable(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

func plan(l *manifest.Lock) []Spec {
	if l == nil {
		return nil
	}
	var specs []Spec
	services := false
	for _, e := range entries(l) {
		src := fmt.Sprintf("%s %q", e.Kind, e.Name)
		specs = append(specs, Spec{Name: MCPName(e.Name), Source: src, Kind: KindEntry, Entry: e})
		d := l.Tools[e.Backend].Describe
		if d.Mode() != protocol.ProcessService {
			continue
		}
		services = true
		if d.Process.Input != nil && !l.Tools[e.Backend].OmitSend { // send = false leaves it out
			specs = append(specs, Spec{
				Name: MCPName(e.Name) + SendSuffix, Kind: KindSend, Entry: e, Input: d.Process.Input,
				Source: fmt.Sprintf("the send companion of service %q", e.Name),
			})
		}
	}
	builtin := func(name string, k Kind) Spec {
		return Spec{Name: name, Kind: k, Source: "the built-in tool"}
	}
	commands := slices.Contains(l.Builtins, BuiltinProcess)
	if services || commands {
		specs = append(specs, builtin(ProcessesTool, KindProcesses), builtin(InboxTool, KindInbox))
	}
	if commands {
		specs = append(specs, builtin(CommandRunTool, KindCommandRun), builtin(CommandStatusTool, KindCommandStatus), builtin(CommandKillTool, KindCommandKill))
	}
	return specs
}

// entries is catalog.Build over the tools that can be called: those with a
// describe document (a tool whose describe failed at lock time has none
// and can never run) and MCP tools (manifest.Tool.Callable).
func entries(l *manifest.Lock) []catalog.Entry {
	cp := *l
	cp.Tools = make(map[string]*manifest.Tool, len(l.Tools))
	for n, t := range l.Tools {
		if t.Callable() {
			cp.Tools[n] = t
		}
	}
	es, _ := catalog.Build(&cp)
	return es
}
