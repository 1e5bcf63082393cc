package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
)

// HelpTimeout bounds `TOOL help`: it prints text and must be quick.
const HelpTimeout = 10 * time.Second

// Help returns the longer help text of a locked tool or capability
// (DESIGN.md §2 commands/help): what `TOOL help [command]` prints, run
// under the tool's locked runtime like a call, on demand and never part of
// a listing. Only a tool that declares help is asked (DeclaresHelp): a v1
// tool knows describe and run only, and its help verb may do anything. A
// tool that declares none, one whose help fails (exits non-zero or prints
// nothing), and a plugin tool get a text built from their locked describe
// document instead. Errors are those of Resolve and Verify.
func Help(ctx context.Context, lockPath string, l *manifest.Lock, name string, callerEnv []string) (string, error) {
	toolName, _, err := Resolve(l, name, nil)
	if err != nil {
		return "", err
	}
	exe, err := OpenVerified(lockPath, l, toolName)
	if err != nil {
		return "", err
	}
	defer exe.Close()
	t := l.Tools[toolName]
	if t.Kind == manifest.KindExec && DeclaresHelp(t.Describe) {
		if err := runnable(toolName, t, nil); err == nil {
			spec, cmd, err := runspec.Prepare(filepath.Dir(lockPath), t, l.EnvAllowlist, runspec.Params{
				Tool: toolName, Verb: runspec.VerbHelp, CallerEnv: callerEnv, Trust: runspec.NewTrust(lockPath, l, "").WithWorkspace(runspec.Workspace{}),
			})
			cmd.Exe = exe
			if err == nil {
				res, err := execute(ctx, spec, cmd, execOptions{timeout: HelpTimeout, stop: stopFor(t.Describe)})
				if err == nil && res.ExitCode == 0 && !res.TimedOut && len(strings.TrimSpace(string(res.Output))) > 0 {
					return string(res.Output), nil
				}
			}
		}
	}
	return describeHelp(toolName, t), nil
}

// DeclaresHelp says whether a tool answers `TOOL help [command]`: a
// protocol 2 tool that lists commands (the v2 spec's "commands and help",
// DESIGN.md §2). v1 tools, and v2 tools without commands, are never asked.
func DeclaresHelp(d *protocol.Describe) bool {
	return d != nil && d.EffectiveProtocol() >= 2 && len(d.Commands) > 0
}

// describeHelp renders a tool's describe document as help text (an MCP
// tool's locked definition: mcpHelp).
func describeHelp(name string, t *manifest.Tool) string {
	if t.Kind == manifest.KindMCP {
		return mcpHelp(name, t)
	}
	d := t.Describe
	var b strings.Builder
	desc := d.Description
	for _, c := range d.Commands {
		if c.Name == t.Command {
			desc = c.Description
		}
	}
	fmt.Fprintf(&b, "%s: %s\n", name, desc)
	args, _ := d.CommandArgs(t.Command)
	if len(args) > 0 {
		b.WriteString("\nArguments:\n")
	}
	for _, a := range args {
		req := "optional"
		if a.Arity == "single" {
			req = "required"
		}
		fmt.Fprintf(&b, "  %s (%s, %s): %s\n", a.Name, a.BackingType, req, a.Description)
	}
	return b.String()
}

// mcpHelp renders an MCP tool's locked definition: its description, then
// each top-level property of its input schema with its type, whether it is
// required and its description. The server is not asked.
func mcpHelp(name string, t *manifest.Tool) string {
	var def struct {
		Description string `json:"description"`
		InputSchema struct {
			Properties map[string]struct {
				Type        any    `json:"type"`
				Description string `json:"description"`
			} `json:"properties"`
			Required []string `json:"required"`
		} `json:"inputSchema"`
	}
	_ = json.Unmarshal(t.MCP.Definition, &def)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", name, def.Description)
	props := def.InputSchema.Properties
	if len(props) > 0 {
		b.WriteString("\nArguments:\n")
	}
	for _, p := range slices.Sorted(maps.Keys(props)) {
		req := "optional"
		if slices.Contains(def.InputSchema.Required, p) {
			req = "required"
		}
		typ := "any"
		if props[p].Type != nil {
			typ = fmt.Sprint(props[p].Type)
		}
		fmt.Fprintf(&b, "  %s (%s, %s): %s\n", p, typ, req, props[p].Description)
	}
	fmt.Fprintf(&b, "\nServed by mcp server %q as its tool %q.\n", t.MCP.Server, t.MCP.Name)
	return b.String()
}
