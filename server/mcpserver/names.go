package mcpserver

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"toolbox/catalog"
	"toolbox/manifest"
	"toolbox/protocol"
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
	// spec's T.send, mapped for strict clients).
	SendSuffix = "_send"
)

// BuiltinProcess is the builtin that enables background commands.
const BuiltinProcess = "process"

// NamePattern is what strict MCP clients accept as a tool name (NOTES.md).
var NamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// MCPName maps a lock name (a tool, a capability, "tool.command") to the
// name MCP clients see: every character outside [a-zA-Z0-9_-] becomes "_",
// so "kv.get" is "kv_get". The result may still be too long; ToolNames
// says so.
func MCPName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

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

// ToolNames returns, sorted, every tool name the MCP server built from l
// serves: each catalog entry (MCPName of its name), each service's send
// companion, and the built-in tools the lock enables. It starts nothing
// and reads only l, so the compiler can call it at lock time. The error
// joins one *NameError per name that collides or is invalid; the names
// are returned either way.
func ToolNames(l *manifest.Lock) ([]string, error) {
	specs := plan(l)
	owners := map[string][]string{}
	for _, sp := range specs {
		owners[sp.name] = append(owners[sp.name], sp.source)
	}
	names := make([]string, 0, len(owners))
	for n := range owners {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if src := owners[n]; len(src) > 1 || !NamePattern.MatchString(n) {
			sort.Strings(src)
			errs = append(errs, &NameError{Name: n, Sources: src})
		}
	}
	return names, errors.Join(errs...)
}

// toolKind says which handler serves a tool.
type toolKind int

const (
	kindEntry toolKind = iota // a catalog entry
	kindSend                  // a service's send companion
	kindProcesses
	kindInbox
	kindCommandRun
	kindCommandStatus
	kindCommandKill
)

// toolSpec is one MCP tool to serve.
type toolSpec struct {
	name   string // the MCP name
	source string // what it comes from, for NameError
	kind   toolKind
	entry  catalog.Entry // kindEntry, kindSend: the entry (a service for kindSend)
	input  *protocol.Input
}

// plan lists the MCP tools of l, in no particular order, collisions
// included.
func plan(l *manifest.Lock) []toolSpec {
	if l == nil {
		return nil
	}
	var specs []toolSpec
	services := false
	for _, e := range entries(l) {
		src := fmt.Sprintf("%s %q", e.Kind, e.Name)
		specs = append(specs, toolSpec{name: MCPName(e.Name), source: src, kind: kindEntry, entry: e})
		d := l.Tools[e.Backend].Describe
		if d.Mode() != protocol.ProcessService {
			continue
		}
		services = true
		if d.Process.Input != nil {
			specs = append(specs, toolSpec{
				name: MCPName(e.Name) + SendSuffix, kind: kindSend, entry: e, input: d.Process.Input,
				source: fmt.Sprintf("the send companion of service %q", e.Name),
			})
		}
	}
	builtin := func(name string, k toolKind) toolSpec {
		return toolSpec{name: name, kind: k, source: "the built-in tool"}
	}
	commands := slices.Contains(l.Builtins, BuiltinProcess)
	if services || commands {
		specs = append(specs, builtin(ProcessesTool, kindProcesses), builtin(InboxTool, kindInbox))
	}
	if commands {
		specs = append(specs, builtin(CommandRunTool, kindCommandRun), builtin(CommandStatusTool, kindCommandStatus), builtin(CommandKillTool, kindCommandKill))
	}
	return specs
}

// entries is catalog.Build over the tools that have a describe document
// (a tool whose describe failed at lock time has none and can never run).
func entries(l *manifest.Lock) []catalog.Entry {
	cp := *l
	cp.Tools = make(map[string]*manifest.Tool, len(l.Tools))
	for n, t := range l.Tools {
		if t != nil && t.Describe != nil {
			cp.Tools[n] = t
		}
	}
	es, _ := catalog.Build(&cp)
	return es
}
