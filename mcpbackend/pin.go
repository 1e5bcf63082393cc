package mcpbackend

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
)

// Pin is what a lock holds of one server that a live session must match:
// its serverInfo, and the definition of each tool it serves.
type Pin struct {
	// Server is the server's name in the toolbox file.
	Server string
	Info   manifest.MCPImplementation
	// Subset says other tools the server lists are ignored
	// (manifest.MCPServer.Subset); otherwise they are drift.
	Subset bool
	// Tools are the pinned tools by their name on the server.
	Tools map[string]Pinned
}

// Pinned is one pinned tool: its name in the lock and its definition.
type Pinned struct {
	Lock       string
	SHA256     string
	Definition json.RawMessage
}

// PinOf is the pin of server in l: its MCPServer and every tool of kind
// manifest.KindMCP that names it. Errors: l has no such server.
func PinOf(l *manifest.Lock, server string) (*Pin, error) {
	s := l.MCPServers[server]
	if s == nil {
		return nil, fmt.Errorf("mcp server %q is not in the lock: run `toolbox lock`", server)
	}
	p := &Pin{Server: server, Info: s.Info, Subset: s.Subset, Tools: map[string]Pinned{}}
	for name, t := range l.Tools {
		if t != nil && t.Kind == manifest.KindMCP && t.MCP != nil && t.MCP.Server == server {
			p.Tools[t.MCP.Name] = Pinned{Lock: name, SHA256: t.MCP.SHA256, Definition: t.MCP.Definition}
		}
	}
	return p, nil
}

// Diff compares what a server announced (info) and listed (live) with
// the pin, one line per difference, in the words of manifest.Diff
// (`toolbox lock --check`): the server's name and version, then by tool
// name: a pinned tool no longer listed ("removed"), a listed tool not
// pinned when the pin is not a subset ("added", under its server name),
// and each field of a changed definition (manifest.DefinitionDiff). Nil
// when the server matches.
func (p *Pin) Diff(info manifest.MCPImplementation, live []Definition) []string {
	var out []string
	at := fmt.Sprintf("mcp server %q", p.Server)
	if p.Info.Name != info.Name {
		out = append(out, fmt.Sprintf("%s: server name %q -> %q", at, p.Info.Name, info.Name))
	}
	if p.Info.Version != info.Version {
		out = append(out, fmt.Sprintf("%s: server version %q -> %q", at, p.Info.Version, info.Version))
	}
	listed := map[string]Definition{}
	for _, d := range live {
		listed[d.Name] = d
	}
	type line struct{ key, text string }
	var lines []line
	for name, pt := range p.Tools {
		d, ok := listed[name]
		switch {
		case !ok:
			lines = append(lines, line{pt.Lock, fmt.Sprintf("tool %q: removed (the server no longer lists %q)", pt.Lock, name)})
		case d.SHA256 != pt.SHA256:
			for _, l := range manifest.DefinitionDiff(pt.Lock, pt.Definition, d.JSON) {
				lines = append(lines, line{pt.Lock, l})
			}
		}
	}
	if !p.Subset {
		for _, d := range live {
			if _, ok := p.Tools[d.Name]; !ok {
				lines = append(lines, line{d.Name, fmt.Sprintf("tool %q: added (the server lists a tool that is not locked)", d.Name)})
			}
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return strings.Compare(a.key, b.key) })
	for i, l := range lines {
		if len(out) == MaxDriftLines-1 && i < len(lines)-1 {
			return append(out, fmt.Sprintf("and %d more differences", len(lines)-i))
		}
		out = append(out, l.text)
	}
	return out
}

// MaxDriftLines bounds the lines of Pin.Diff: past it the last line
// counts the rest ("and N more differences"), so that a server listing
// thousands of tools does not turn every refused call into an error (and
// a log line) larger than its listing.
const MaxDriftLines = 50

// DriftError is a server whose listing differs from the lock: the call is
// refused before the server is asked anything else. Lines are Pin.Diff's.
type DriftError struct {
	Server string
	Lines  []string
}

func (e *DriftError) Error() string {
	return fmt.Sprintf("mcp server %q does not list its locked tools: %s", e.Server, strings.Join(e.Lines, "; "))
}

// DriftFix is the fix of a DriftError.
const DriftFix = "review what changed in the server; if you trust it, run `toolbox lock` (and `toolbox lock --check` in CI)"

// DriftOf compares what a fresh compilation found of the MCP servers
// (fresh, a lock just built by the compiler) with their pins in locked
// (the lock on disk): for each server of locked that fresh has, the lines
// of Pin.Diff, nil when it matches. `toolbox check --probe` reports a
// server that lists anything but its locked tools as failed with them.
func DriftOf(locked, fresh *manifest.Lock) map[string][]string {
	out := map[string][]string{}
	for name := range locked.MCPServers {
		fs := fresh.MCPServers[name]
		if fs == nil {
			continue
		}
		pin, err := PinOf(locked, name)
		if err != nil {
			continue
		}
		var live []Definition
		for _, t := range fresh.Tools {
			if t != nil && t.Kind == manifest.KindMCP && t.MCP != nil && t.MCP.Server == name {
				live = append(live, Definition{Name: t.MCP.Name, JSON: t.MCP.Definition, SHA256: t.MCP.SHA256})
			}
		}
		out[name] = pin.Diff(fs.Info, live)
	}
	return out
}
