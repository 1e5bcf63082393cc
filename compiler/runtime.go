package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// describeSpec confines `TOOL describe`. The tool's declarations are not
// known yet, so it gets the strictest spec the requested mechanism can
// honour here: only the system and its own directory, no network, a
// private /tmp (bwrap), or the same without the network cut (landlock).
// Under "none", or when no mechanism works on this machine, describe runs
// like any unsandboxed tool: a tool that declares a sandbox is then
// refused before anything else of it runs. A plugin is never described
// under landlock as root (sandbox.Need.UnixSockets): where that is the
// only mechanism here, it is refused (the *sandbox.RefusalError) without
// being run, never described unconfined instead.
func (p *prober) describeSpec(t *ToolDecl) (*sandbox.Spec, error) {
	if p.mechanism == string(sandbox.None) {
		return nil, nil
	}
	dir := filepath.Dir(t.Path)
	plugin := t.Kind == KindPlugin
	root := os.Geteuid() == 0
	var pluginErr error
	for _, need := range []sandbox.Need{{Sandbox: true, NetNone: true, TmpPrivate: true}, {Sandbox: true}} {
		m, err := sandbox.Resolve(sandbox.Mechanism(p.mechanism), need)
		if err != nil {
			continue
		}
		if plugin {
			need.UnixSockets, need.Root = true, root
			if m, err = sandbox.Resolve(sandbox.Mechanism(p.mechanism), need); err != nil {
				why := err.Error()
				var rf *sandbox.RefusalError
				if errors.As(err, &rf) {
					why = rf.Reason
				}
				pluginErr = &sandbox.RefusalError{Field: sandbox.FieldSandbox, Mechanism: sandbox.Mechanism(p.mechanism),
					Reason: "describing the plugin as uid 0: " + why,
					Fix:    `install bubblewrap and set sandbox = "auto" or "bwrap": a plugin's describe runs as toolbox's user, and landlock refuses a plugin running as root`}
				continue
			}
		}
		return &sandbox.Spec{Mechanism: m, ToolDir: dir, NetNone: need.NetNone, TmpPrivate: need.TmpPrivate,
			Bwrap: p.trust.Bwrap, Protected: p.trust.Protected, Hidden: p.trust.Hidden}, nil
	}
	return nil, pluginErr
}

// resolveRuntime turns the tool's runtime declarations into the locked
// runtime: the mechanism (what auto chose), run_as ids, envdir, rundir and
// the operator's call timeout. A declaration that cannot be honoured is an
// error naming the tool, the field and the mechanism.
func (p *prober) resolveRuntime(t *ToolDecl, d *protocol.Describe) (manifest.Runtime, error) {
	rt := manifest.Runtime{Mechanism: string(sandbox.None)}
	if t.Timeout > 0 {
		rt.TimeoutSeconds = t.Timeout.Seconds()
	}
	c, err := resolveConcurrency(t, d)
	if err != nil {
		return rt, err
	}
	rt.Concurrency = c
	decl := d.Runtime
	if decl == nil {
		return rt, nil
	}
	toolDir := filepath.Dir(t.Path)
	block := fmt.Sprintf("tool %q", t.Name)
	fail := func(field, msg, fix string) error {
		return &Diagnostic{File: t.Range.Filename, Line: t.Range.Start.Line, Col: t.Range.Start.Column, Block: block, Msg: fmt.Sprintf("%s: %s", field, msg), Fix: fix}
	}
	need := sandbox.Need{RunAs: decl.RunAs != nil}
	if sb := decl.Sandbox; sb != nil {
		need.Sandbox = true
		need.NetNone = sb.Net == "none"
		need.TmpPrivate = sb.Tmp == "private"
		if sb.FS != nil {
			need.HasReadWrite = len(sb.FS.Write) > 0
			for _, g := range []struct {
				field string
				paths []string
			}{{sandbox.FieldRead, sb.FS.Read}, {sandbox.FieldWrite, sb.FS.Write}} {
				field := g.field
				for _, path := range g.paths {
					if _, named, _ := protocol.WorkspacePath(path); named {
						continue // resolved at each call, never pinned (DESIGN.md §4)
					}
					abs := path
					if !filepath.IsAbs(abs) {
						abs = filepath.Join(toolDir, path)
					}
					// Resolved now, once: a run opens exactly this, without
					// following any link planted later (DESIGN.md §6).
					real, err := filepath.EvalSymlinks(abs)
					if err != nil {
						return rt, fail(field, fmt.Sprintf("declared path %q (%s) does not exist, so sandbox %q cannot grant it", path, abs, p.mechanism), "create it, or fix the tool's describe document")
					}
					if rt.Paths == nil {
						rt.Paths = map[string]string{}
					}
					rt.Paths[path] = p.lockRelative(real)
				}
			}
		}
	}
	if decl.RunAs != nil && !t.AllowRunAs {
		return rt, fail("runtime.run_as", "the operator does not allow run_as for this tool (allow_run_as = false)", "remove allow_run_as = false from the tool block, or use a tool that does not declare run_as")
	}
	need.Root = os.Geteuid() == 0
	if ra := decl.RunAs; ra != nil {
		id, err := sandbox.LookupIdentity(ra.User, ra.Group)
		if err != nil {
			return rt, refusal(t, err)
		}
		name := ra.User
		rt.RunAs = &manifest.Identity{User: name, UID: id.UID, GID: id.GID, Groups: id.Groups}
		need.Root = id.UID == 0
	}
	if need.Sandbox || need.RunAs {
		// A plugin listens on a unix socket (runspec.Spec sets UnixSockets).
		need.UnixSockets = t.Kind == KindPlugin
		m, err := sandbox.Resolve(sandbox.Mechanism(p.mechanism), need)
		if err != nil {
			return rt, refusal(t, err)
		}
		rt.Mechanism = string(m)
	}
	if decl.Envdir != "" {
		if p.cfg.EnvdirRoot == "" {
			return rt, fail("runtime.envdir", "the tool wants an envdir but the toolbox file sets no envdir_root", fmt.Sprintf("set envdir_root in %s and create <envdir_root>/%s", p.cfg.Path, t.Name))
		}
		root := p.cfg.EnvdirRoot
		dir := filepath.Join(root, t.Name)
		abs := dir
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(p.cfg.Dir, dir)
		}
		if msg, fix := envdirProblem(abs); msg != "" {
			return rt, fail("runtime.envdir", msg, fix)
		}
		rt.Envdir = filepath.ToSlash(dir)
	}
	if rel, named, _ := protocol.WorkspacePath(decl.Rundir); named {
		rt.Rundir = path.Join(protocol.WorkspaceToken, rel) // resolved at each call
	} else if decl.Rundir != "" {
		abs := decl.Rundir
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(toolDir, abs)
		}
		// Relative to the lock's directory, so that the lock survives a move
		// of the tree (filepath.Rel fails only across volumes).
		rel, err := filepath.Rel(p.cfg.Dir, abs)
		if err != nil {
			rel = abs
		}
		rt.Rundir = filepath.ToSlash(rel)
	}
	if !need.Sandbox {
		rt.Paths = nil // a tool declaring only run_as has no sandbox paths
	}
	return rt, nil
}

// lockRelative writes a resolved path as the lock keeps it: relative to
// the lock's directory (slash-separated) when it lies there, so that the
// lock survives a move of the tree, else absolute.
// A path not yet resolved (an MCP server's command and files) is also
// taken relative to the directory as written.
func (p *prober) lockRelative(path string) string {
	dirs := []string{p.cfg.Dir}
	if real, err := filepath.EvalSymlinks(p.cfg.Dir); err == nil && real != p.cfg.Dir {
		dirs = []string{real, p.cfg.Dir}
	}
	for _, dir := range dirs {
		if rel, err := filepath.Rel(dir, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(path)
}

// lockTrust is what the lock being written will protect (DESIGN.md §6,
// decision D2) as far as the compiler knows it, built by
// runspec.TrustOf as every run's is: the toolbox file, the lock, the
// envdir root, every tool's binary, every MCP server's executable and
// entry script, toolbox's executables, the bubblewrap it pins (found on
// PATH and probed by sandbox.Detect, unless the mechanism is "none"), and
// the state directory given (hidden).
func lockTrust(cfg *Config, mechanism, stateDir string) *runspec.Trust {
	file, err := filepath.Abs(cfg.Path)
	if err != nil {
		file = filepath.Join(cfg.Dir, filepath.Base(cfg.Path))
	}
	// A relative envdir root is relative to the toolbox file's directory,
	// which is the lock's.
	g := runspec.Guarded{ToolboxFile: file, EnvdirRoot: cfg.EnvdirRoot, Hidden: []string{stateDir}}
	for _, t := range cfg.Tools {
		g.Binaries = append(g.Binaries, t.Path)
	}
	for _, d := range cfg.MCPServers {
		g.Binaries = append(g.Binaries, d.Exe, d.Entry)
	}
	if mechanism != string(sandbox.None) {
		g.Bwrap = sandbox.Detect().BwrapPin
	}
	return runspec.TrustOf(manifest.LockPath(file), g)
}

// checkConfinement refuses at lock time what every start of the tool
// would refuse (sandbox.Spec.Check): a grant that would let it write a
// protected path the mechanism cannot mask (landlock), a grant inside a
// protected path or reaching the state dir, a declared path covering the
// host's /tmp. The refusal names the tool, the grant and the file.
func (p *prober) checkConfinement(t *ToolDecl, lt *manifest.Tool) error {
	spec, err := runspec.Spec(p.cfg.Dir, lt, p.trust)
	if err == nil {
		err = spec.Check()
	}
	if err != nil {
		return refusal(t, err)
	}
	return nil
}

// refusal locates a sandbox refusal at the tool's block, keeping the
// *sandbox.RefusalError reachable (check --probe reports it as skipped).
func refusal(t *ToolDecl, err error) error {
	d := &Diagnostic{File: t.Range.Filename, Line: t.Range.Start.Line, Col: t.Range.Start.Column, Block: fmt.Sprintf("tool %q", t.Name), Msg: err.Error(), Err: err}
	var r *sandbox.RefusalError
	if errors.As(err, &r) {
		d.Fix = r.Fix
	}
	return d
}

// envdirProblem says what stops toolbox from reading the envdir at abs, a
// message naming it and the fix, or "" when it is a directory toolbox can
// reach. A directory this user cannot search (an envdir root of mode 0700
// owned by another user, as a check run by CI as another user meets) is
// said as such, not as missing.
func envdirProblem(abs string) (msg, fix string) {
	st, err := os.Stat(abs)
	switch {
	case err == nil && st.IsDir():
		return "", ""
	case err == nil:
		return fmt.Sprintf("envdir %q is not a directory", abs), "make it a directory holding one file per variable (daemontools envdir)"
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("envdir %q does not exist", abs), "create it with one file per variable (daemontools envdir)"
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("envdir %q cannot be reached by uid %d: %v", abs, os.Geteuid(), errors.Unwrap(err)),
			"run toolbox as the user the envdir root belongs to, or let this user read it (it holds secrets: grant a group, not everyone)"
	default:
		return fmt.Sprintf("envdir %q: %v", abs, err), "make it a directory toolbox can read, one file per variable (daemontools envdir)"
	}
}
