package compiler

import (
	"fmt"
	"sort"
	"strings"

	"toolbox/manifest"
	"toolbox/protocol"
)

// expand puts a probed tool into the lock. A tool whose describe document
// lists commands (DESIGN.md §2 `commands`) becomes one locked tool per
// command, named "<tool>.<command>", each run as `TOOL run <command> ARGS…`
// (runspec passes the command); the binary itself is then not callable.
// A tool without commands is locked as it is, exactly v1.
func expand(name string, lt *manifest.Tool, r *ToolReport, tools map[string]*manifest.Tool, reports map[string]*ToolReport) {
	reports[name] = r
	cmds := lt.Describe.Commands
	if len(cmds) == 0 {
		tools[name] = lt
		return
	}
	for _, c := range cmds {
		ct := *lt
		ct.Command = c.Name
		full := name + "." + c.Name
		tools[full] = &ct
		cr := *r
		cr.Name = full
		reports[full] = &cr
	}
	// The binary's own report stays: check --probe shows its probe.
}

// modelArgs are the args a model passes to a locked tool: its command's
// (or its own), less those the operator bound.
func modelArgs(t *manifest.Tool) []protocol.Arg {
	args, _ := t.Describe.CommandArgs(t.Command)
	return unbound(args, t.Bindings)
}

// StrictName is the name a strict client (MCP: ^[a-zA-Z0-9_-]{1,64}$) gets
// for a tool or capability: "tool.command" becomes "tool_command".
func StrictName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// checkNames refuses names that collide once mapped for strict clients
// (a command "git.status" and a tool "git_status") or that are too long.
func checkNames(cfg *Config, l *manifest.Lock) []error {
	owners := map[string][]string{}
	for n := range l.Tools {
		owners[StrictName(n)] = append(owners[StrictName(n)], n)
	}
	for n := range l.Capabilities {
		owners[StrictName(n)] = append(owners[StrictName(n)], n)
	}
	var errs []error
	keys := make([]string, 0, len(owners))
	for k := range owners {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		names := owners[k]
		sort.Strings(names)
		switch {
		case len(names) > 1:
			errs = append(errs, &Diagnostic{File: cfg.Path, Msg: fmt.Sprintf("names %q all become %q for MCP clients", names, k), Fix: "rename a tool, a capability or a command"})
		case len(k) > 64:
			errs = append(errs, &Diagnostic{File: cfg.Path, Msg: fmt.Sprintf("name %q is longer than the 64 characters MCP clients accept", names[0]), Fix: "shorten the tool or command name"})
		}
	}
	return errs
}
