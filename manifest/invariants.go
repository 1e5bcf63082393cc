package manifest

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/protocol"
)

// Mechanisms a toolbox's sandbox setting can choose for a tool that
// declares runtime.sandbox or runtime.run_as (DESIGN.md §6): none refuses
// such tools, auto takes bwrap or landlock.
var choosable = map[string][]string{
	"none":     {},
	"bwrap":    {"bwrap"},
	"landlock": {"landlock"},
	"auto":     {"bwrap", "landlock"},
}

// confinement checks what only a compiler that honoured the toolbox file
// could have written (DESIGN.md §4): a lock edited by hand, or by a tool
// that could write it, breaks one of them and is refused as a whole by
// Unmarshal, so that neither `toolbox check` nor a run trusts it.
//
//   - A tool that declares runtime.sandbox or runtime.run_as is locked
//     with a mechanism the toolbox's sandbox setting can choose (never
//     "none"); one that declares neither is locked with "none".
//   - landlock never holds a tool declaring net: none or tmp: private.
//   - runtime.run_as is resolved exactly when the describe document
//     declares run_as.
//   - every declared sandbox path has its lock-time resolution in
//     runtime.paths, and runtime.paths holds nothing else.
//   - a confined builtin "process" is locked with a mechanism the
//     sandbox setting can choose, and never with landlock for net: none
//     or tmp: private.
//   - an MCP server follows the rules of a tool declaring runtime.sandbox
//     (its block's sandbox), its tools carry its mechanism, and its
//     declared paths have their resolutions (mcpConfinement, mcpPaths).
//   - bwrap is pinned exactly when a tool, an MCP server or the builtin
//     "process" is locked with it.
func (v *validator) confinement(l *Lock) {
	if p := l.Process; p != nil && !p.Unconfined && p.Sandbox != nil {
		if allowed, known := choosable[l.Sandbox]; known && !slices.Contains(allowed, p.Mechanism) {
			v.addf("builtin_process: mechanism is %q, which sandbox %q cannot choose for a confined builtin", p.Mechanism, l.Sandbox)
		}
		v.landlockHonours("builtin_process: mechanism", p.Mechanism, p.Sandbox.Net, p.Sandbox.Tmp)
	}
	// Background commands run under the pinned bwrap too.
	usesBwrap := l.Process != nil && l.Process.Mechanism == "bwrap"
	for _, name := range sortedKeys(l.Tools) {
		t := l.Tools[name]
		if t == nil {
			continue
		}
		if t.Kind == KindMCP {
			continue // confined by its server (mcpConfinement)
		}
		if t.Runtime.Mechanism == "bwrap" {
			usesBwrap = true
		}
		v.toolConfinement(name, t, l.Sandbox)
	}
	if v.mcpConfinement(l) {
		usesBwrap = true
	}
	switch p := l.Bwrap; {
	case p == nil && usesBwrap:
		v.addf("bwrap is missing: a tool, an mcp server or the builtin \"process\" is locked with mechanism \"bwrap\", so the lock must pin the bubblewrap it runs")
	case p != nil && !usesBwrap && !v.partial:
		v.addf("bwrap is pinned but neither a tool, an mcp server nor the builtin \"process\" is locked with mechanism \"bwrap\"")
	case p != nil:
		if !path.IsAbs(p.Path) || path.Clean(p.Path) != p.Path {
			v.addf("bwrap.path is %q, want an absolute, clean path", p.Path)
		}
		v.sha256("bwrap.sha256", p.SHA256)
	}
}

func (v *validator) toolConfinement(name string, t *Tool, request string) {
	at := fmt.Sprintf("tool %q", name)
	rt := describeRuntime(t)
	var sandboxed, runAs bool
	if rt != nil {
		sandboxed, runAs = rt.Sandbox != nil, rt.RunAs != nil
	}
	m := t.Runtime.Mechanism
	allowed, known := choosable[request]
	switch {
	case !known:
		// Reported by the sandbox key already.
	case sandboxed || runAs:
		field := "runtime.sandbox"
		if !sandboxed {
			field = "runtime.run_as"
		}
		if !slices.Contains(allowed, m) {
			v.addf("%s: runtime.mechanism is %q, which sandbox %q cannot choose for a tool that declares %s", at, m, request, field)
		}
	case m != "none" && m != "":
		v.addf("%s: runtime.mechanism is %q but the tool declares neither runtime.sandbox nor runtime.run_as", at, m)
	}
	if sandboxed {
		v.landlockHonours(at+": runtime.mechanism", m, rt.Sandbox.Net, rt.Sandbox.Tmp)
	}
	switch {
	case runAs && t.Runtime.RunAs == nil:
		v.addf("%s: the describe document declares run_as but runtime.run_as is missing", at)
	case !runAs && t.Runtime.RunAs != nil:
		v.addf("%s: runtime.run_as is set but the describe document declares no run_as", at)
	}
	var declared []string
	if sandboxed && rt.Sandbox.FS != nil {
		declared = append(slices.Clone(rt.Sandbox.FS.Read), rt.Sandbox.FS.Write...)
	}
	for _, p := range declared {
		if _, ws, err := protocol.WorkspacePath(p); err != nil || ws {
			continue // resolved at each call; a bad one is workspaceUses'
		}
		if r, ok := t.Runtime.Paths[p]; !ok || r == "" || strings.ContainsRune(r, 0) {
			v.addf("%s: runtime.paths lacks the lock-time resolution of declared path %q", at, p)
		}
	}
	for _, p := range sortedKeys(t.Runtime.Paths) {
		if _, ws, _ := protocol.WorkspacePath(p); ws || !slices.Contains(declared, p) {
			v.addf("%s: runtime.paths holds %q, which the describe document does not declare as a path resolved at lock (the workspace is resolved at each call)", at, p)
		}
	}
	v.workspaceUses(at, t, declared)
}

// landlockHonours refuses landlock (mechanism m) for what it can never
// honour: net: none and tmp: private (NOTES.md, Landlock).
func (v *validator) landlockHonours(at, m, net, tmp string) {
	if m != "landlock" {
		return
	}
	if net == "none" {
		v.addf("%s is \"landlock\", which cannot honour net: none", at)
	}
	if tmp == "private" {
		v.addf("%s is \"landlock\", which cannot honour tmp: private", at)
	}
}
