// Package exposure reports what every tool of a lock, its MCP servers and
// its builtin "process" would be able to reach and change if run now: the exposure
// report of `toolbox check --probe` (DESIGN.md §6, "Exposure report"),
// after `systemd-analyze security`.
//
// Nothing here decides a confinement: each spec is built by the code a
// run uses (runspec.Prepare for a tool, sandbox.Spec.ForPlugin for a
// plugin's socket directory, runspec.MCPServer for an MCP server,
// runspec.CommandSpec for background commands) and explained by sandbox.Explain, which lays out the start
// as sandbox.Start does, with the same refusals, without starting
// anything. Like a run, Prepare creates the shared tmp and a missing
// rundir; a plugin's socket directory is made and removed again.
//
// What it does not do: verify binaries against the lock (`toolbox
// check` does, with run's messages), or run anything.
package exposure

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Entry is the exposure of one tool, MCP server, or of the builtin
// "process". Its JSON form is part of `toolbox check --probe --json`.
type Entry struct {
	// Name is the tool's name (a command of a multi-command binary as
	// "binary.command"), the MCP server's, or "process" for the builtin.
	Name string `json:"name"`
	// Exposure is what it would get; absent when a run would refuse it.
	Exposure *sandbox.Exposure `json:"exposure,omitempty"`
	// Refused says why a run would refuse it now, and Fix what to change
	// (the refusal's fix, when it has one).
	Refused string `json:"refused,omitempty"`
	Fix     string `json:"fix,omitempty"`
}

// Options tune Tools and Process. The zero value is usable.
type Options struct {
	// StateDir is the state directory in use: hidden from every tool, as
	// at run time ("" = none).
	StateDir string
	// CallerEnv is the caller's environment (what a run starts from).
	CallerEnv []string
	// Dir is the working directory of background commands that give none
	// ("" = this process's), as the supervisor's own; the workspace, when
	// there is one, comes first, as in the supervisor.
	Dir string
	// Workspace is the caller's choice of workspace (--workspace or
	// $TOOLBOX_WORKSPACE): the zero value takes the lock's default, else
	// the current directory, as a run does (runspec.Trust.WithWorkspace).
	// A tool naming it is explained under it, writes there reported as
	// sandbox.ReasonWritesWorkspace; when it cannot be used, such a tool
	// is refused with the workspace's reason and fix.
	Workspace runspec.Workspace
}

// Trust is the trust the entries are explained under: the lock's
// protected paths, opts.StateDir hidden, and opts.Workspace resolved
// (its Workspace, or WorkspaceErr saying why it cannot be used).
func Trust(lockPath string, l *manifest.Lock, opts Options) *runspec.Trust {
	return runspec.NewTrust(lockPath, l, opts.StateDir).WithWorkspace(opts.Workspace)
}

// PluginSocketDir is how a plugin's socket directory is named in a
// report: go-plugin makes a fresh one for every start under
// plugins.SocketBase.
const PluginSocketDir = "plugin-dir*"

// Tools explains every tool of lock l at lockPath (absolute), sorted by
// name, as a run would start it now. The tools of MCP servers are left
// out: their server is what runs (MCPServers).
func Tools(lockPath string, l *manifest.Lock, opts Options) []Entry {
	trust := Trust(lockPath, l, opts)
	lockDir := filepath.Dir(lockPath)
	home := realDir(lockDir)
	names := make([]string, 0, len(l.Tools))
	for n, t := range l.Tools {
		if t != nil && t.Kind != manifest.KindMCP {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		e := Entry{Name: n}
		exp, err := explainTool(lockDir, home, l, n, trust, opts)
		e.set(exp, err)
		out = append(out, e)
	}
	return out
}

func explainTool(lockDir, home string, l *manifest.Lock, name string, trust *runspec.Trust, opts Options) (*sandbox.Exposure, error) {
	t := l.Tools[name]
	spec, cmd, err := runspec.Prepare(lockDir, t, l.EnvAllowlist, runspec.Params{Tool: name, Verb: runspec.VerbRun, CallerEnv: opts.CallerEnv, Trust: trust})
	if err != nil {
		return nil, err
	}
	var socketDir string
	var scratch []string
	if t.Kind == manifest.KindPlugin && spec.Mechanism != sandbox.None {
		// What go-plugin makes for each start (plugins.Options.Start).
		if socketDir, err = os.MkdirTemp(plugins.SocketBase(), "plugin-dir"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(socketDir)
		spec = spec.ForPlugin(socketDir)
		scratch = []string{realDir(socketDir)}
	}
	exp, err := sandbox.Explain(spec, cmd, sandbox.ExplainOptions{Home: home, Scratch: scratch, Workspace: trust.Workspace})
	if err != nil || socketDir == "" {
		return exp, err
	}
	// The directory's name is new at every start: say so.
	for i, w := range exp.Write {
		if w.Path == scratch[0] {
			exp.Write[i].Path = filepath.Join(filepath.Dir(w.Path), PluginSocketDir)
			exp.Write[i].Inside = filepath.Join(filepath.Dir(w.Inside), PluginSocketDir)
		}
	}
	return exp, nil
}

// MCPServers explains every MCP server of lock l at lockPath (absolute)
// run over stdio, sorted by name, as a call would start it now
// (runspec.MCPServer); a server reached by URL runs elsewhere and has no
// entry.
func MCPServers(lockPath string, l *manifest.Lock, opts Options) []Entry {
	trust := Trust(lockPath, l, opts)
	lockDir := filepath.Dir(lockPath)
	names := make([]string, 0, len(l.MCPServers))
	for n, s := range l.MCPServers {
		if s != nil && s.URL == "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		e := Entry{Name: n}
		spec, cmd, err := runspec.MCPServer(lockDir, l, n, opts.CallerEnv, "", trust)
		if err == nil {
			e.set(sandbox.Explain(spec, cmd, sandbox.ExplainOptions{Home: realDir(lockDir)}))
		} else {
			e.set(nil, err)
		}
		out = append(out, e)
	}
	return out
}

// Process explains the background commands of lock l's builtin "process"
// as the supervisor starts them now (`bash -c`, in the workspace or else
// Options.Dir when it lies inside the sandbox, else in its first path);
// nil when the lock declares no builtin "process".
func Process(lockPath string, l *manifest.Lock, opts Options) *Entry {
	if l.Process == nil {
		return nil
	}
	e := &Entry{Name: manifest.BuiltinProcess}
	trust := Trust(lockPath, l, opts)
	spec, err := runspec.CommandSpec(lockPath, l, trust)
	if err != nil {
		e.set(nil, err)
		return e
	}
	dir := opts.Dir
	switch {
	case trust.Workspace != "":
		dir = trust.Workspace
	case dir == "":
		dir, _ = os.Getwd()
	}
	if spec != nil && spec.Mechanism != sandbox.None {
		dir = runspec.CommandDir(spec, dir)
	}
	cmd := sandbox.Command{Path: supervisor.DefaultShell(), Args: []string{"-c", ""}, Dir: dir}
	e.set(sandbox.Explain(spec, cmd, sandbox.ExplainOptions{Home: realDir(filepath.Dir(lockPath)), Workspace: trust.Workspace}))
	return e
}

func (e *Entry) set(exp *sandbox.Exposure, err error) {
	if err != nil {
		e.Refused = err.Error()
		var r *sandbox.RefusalError
		if errors.As(err, &r) {
			e.Fix = r.Fix
		}
		return
	}
	e.Exposure = exp
}

// realDir is dir with its symlinks resolved (grants are compared
// resolved), or dir when that fails.
func realDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}
