package compiler

import (
	"cmp"
	"slices"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
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
	// The commands share one Describe, their commands sorted by name: the
	// lock stores each command with its tool and reads them back in that
	// order (manifest, binaries.go).
	d := *lt.Describe
	d.Commands = slices.SortedFunc(slices.Values(cmds), func(a, b protocol.Command) int { return cmp.Compare(a.Name, b.Name) })
	lt.Describe = &d
	for _, c := range d.Commands {
		ct := *lt
		ct.Command, ct.Binary = c.Name, name
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

// checkNames refuses a lock whose tools MCP clients could not be given:
// names that collide once mapped for strict clients (a command "git.status"
// and a tool "git_status", a service's send companion and a tool), or that
// are too long (mcpnames.ToolNames, the MCP server's own rule).
func checkNames(cfg *Config, l *manifest.Lock) []error {
	_, err := mcpnames.ToolNames(l)
	if err == nil {
		return nil
	}
	var errs []error
	for _, e := range unjoin(err) {
		errs = append(errs, &Diagnostic{File: cfg.Path, Msg: e.Error(), Err: e})
	}
	return errs
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
