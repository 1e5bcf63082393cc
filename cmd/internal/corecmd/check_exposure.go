package corecmd

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/launcher/exposure"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// exposureReport is the "exposure" object of check --probe --json: every
// tool the probes could lock, and the builtin "process", each with what
// a run would give it now (DESIGN.md §6, "Exposure report").
type exposureReport struct {
	// Workspace is the workspace the tools naming it are explained under
	// (absolute, symlinks resolved), absent when none can be used, and
	// WorkspaceRefused then says why.
	Workspace        string           `json:"workspace,omitempty"`
	WorkspaceRefused string           `json:"workspace_refused,omitempty"`
	Tools            []exposure.Entry `json:"tools"`
	// MCPServers are the MCP servers run over stdio: what runs for their
	// tools, which Tools leaves out.
	MCPServers     []exposure.Entry `json:"mcp_servers,omitempty"`
	BuiltinProcess *exposure.Entry  `json:"builtin_process,omitempty"`
}

// buildExposure explains the tools of l, the lock the probes built for the
// toolbox file, as runs of the lock beside it would start them on the
// workspace ws (the zero value: the toolbox file's default, else the
// current directory, as a run's). A nil l (the probes built no lock)
// explains nothing.
func buildExposure(opts *CheckOptions, file string, l *manifest.Lock, callerEnv []string, ws runspec.Workspace) exposureReport {
	if l == nil { // nothing could be compiled (the errors say why)
		return exposureReport{Tools: []exposure.Entry{}}
	}
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	lockPath := manifest.LockPath(file)
	xo := exposure.Options{StateDir: opts.StateDirInUse(), CallerEnv: callerEnv, Workspace: ws}
	rep := exposureReport{Tools: exposure.Tools(lockPath, l, xo), MCPServers: exposure.MCPServers(lockPath, l, xo), BuiltinProcess: exposure.Process(lockPath, l, xo)}
	if runspec.UsesWorkspace(l) {
		trust := exposure.Trust(lockPath, l, xo)
		rep.Workspace = trust.Workspace
		if trust.WorkspaceErr != nil {
			rep.WorkspaceRefused = trust.WorkspaceErr.Error()
		}
	}
	return rep
}

// printExposure prints the exposure report: per tool its verdict and
// confinement on one line, then what it reaches and why the verdict.
func printExposure(w io.Writer, r exposureReport) {
	fmt.Fprintln(w, "exposure (confined, partial or exposed):")
	switch {
	case r.Workspace != "":
		fmt.Fprintf(w, "  on the workspace %s\n", r.Workspace)
	case r.WorkspaceRefused != "":
		fmt.Fprintf(w, "  no usable workspace: %s\n", r.WorkspaceRefused)
	}
	for _, e := range r.Tools {
		printEntry(w, e.Name, e)
	}
	for _, e := range r.MCPServers {
		printEntry(w, fmt.Sprintf("mcp server %q", e.Name), e)
	}
	if r.BuiltinProcess != nil {
		printEntry(w, `builtin "process"`, *r.BuiltinProcess)
	}
}

func printEntry(w io.Writer, name string, e exposure.Entry) {
	x := e.Exposure
	if x == nil {
		fmt.Fprintf(w, "  %s: refused: %s", name, e.Refused)
		if e.Fix != "" {
			fmt.Fprintf(w, " (fix: %s)", e.Fix)
		}
		fmt.Fprintln(w)
		return
	}
	seccomp := x.Seccomp
	if seccomp == "" {
		seccomp = "none"
	}
	fmt.Fprintf(w, "  %s: %s (%s, uid %d, net %s, tmp %s, seccomp %s)\n", name, x.Verdict.Level, x.Mechanism, x.UID, x.Net, tmpText(x.Tmp), seccomp)
	if x.FS == "granted" {
		line(w, "read", pathsText(x.Read))
		line(w, "write", pathsText(x.Write))
	}
	line(w, "protected", protectedText(x.Protected))
	line(w, "limits", limitsText(x.Limits))
	for _, r := range x.Verdict.Reasons {
		fmt.Fprintf(w, "    - %s: %s\n", r.ID, r.Text)
	}
}

func line(w io.Writer, label, text string) {
	if text != "" {
		fmt.Fprintf(w, "    %s: %s\n", label, text)
	}
}

func tmpText(t sandbox.TmpExposure) string {
	switch {
	case t.Kind == "private" && t.Size > 0:
		return "private " + sandbox.FormatSize(t.Size)
	case t.Kind == "shared":
		s := "shared "
		if t.Size > 0 { // the tmpfs toolbox mounted on it (as root)
			s += sandbox.FormatSize(t.Size) + " "
		}
		s += t.Path
		if t.Inside != t.Path {
			s += " at " + t.Inside
		}
		return s
	}
	return t.Kind
}

func pathsText(ps []sandbox.PathExposure) string {
	var out []string
	for _, p := range ps {
		s := p.Path
		if p.Inside != p.Path {
			s += " as " + p.Inside
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// protectedText counts the protected paths by how each is kept out of
// the tool's reach (the JSON names them).
func protectedText(ps []sandbox.ProtectedExposure) string {
	count := map[string]int{}
	order := []string{sandbox.ProtectedMasked, sandbox.ProtectedHidden, sandbox.ProtectedReadOnly, sandbox.ProtectedOutOfReach, sandbox.ProtectedUnguarded}
	for _, p := range ps {
		if count[p.How]++; !slices.Contains(order, p.How) {
			order = append(order, p.How) // never expected: shown as it is
		}
	}
	var parts []string
	for _, how := range order {
		if count[how] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[how], strings.ReplaceAll(how, "-", " ")))
		}
	}
	return strings.Join(parts, ", ")
}

// limitsText lists the limits that are set, each marked when this
// machine does not enforce it for the tool.
func limitsText(ls []sandbox.LimitExposure) string {
	var parts []string
	for _, l := range ls {
		if l.Value == "unlimited" {
			continue
		}
		s := l.Limit + " " + l.Value
		if !l.Enforced {
			s += " (not enforced)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
