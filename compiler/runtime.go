package compiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// describeSpec confines `TOOL describe`. The tool's declarations are not
// known yet, so it gets the strictest spec the requested mechanism can
// honour here: only the system and its own directory, no network, a
// private /tmp (bwrap), or the same without the network cut (landlock).
// Under "none", or when no mechanism works on this machine, describe runs
// like any unsandboxed tool: a tool that declares a sandbox is then
// refused before anything else of it runs.
func (p *prober) describeSpec(t *ToolDecl) *sandbox.Spec {
	if p.mechanism == string(sandbox.None) {
		return nil
	}
	dir := filepath.Dir(t.Path)
	for _, need := range []sandbox.Need{{Sandbox: true, NetNone: true, TmpPrivate: true}, {Sandbox: true}} {
		m, err := sandbox.Resolve(sandbox.Mechanism(p.mechanism), need)
		if err == nil {
			return &sandbox.Spec{Mechanism: m, ToolDir: dir, NetNone: need.NetNone, TmpPrivate: need.TmpPrivate}
		}
	}
	return nil
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
					abs := path
					if !filepath.IsAbs(abs) {
						abs = filepath.Join(toolDir, path)
					}
					if _, err := os.Stat(abs); err != nil {
						return rt, fail(field, fmt.Sprintf("declared path %q (%s) does not exist, so sandbox %q cannot grant it", path, abs, p.mechanism), "create it, or fix the tool's describe document")
					}
				}
			}
		}
	}
	if decl.RunAs != nil && !t.AllowRunAs {
		return rt, fail("runtime.run_as", "the operator does not allow run_as for this tool (allow_run_as = false)", "remove allow_run_as = false from the tool block, or use a tool that does not declare run_as")
	}
	if need.Sandbox || need.RunAs {
		m, err := sandbox.Resolve(sandbox.Mechanism(p.mechanism), need)
		if err != nil {
			return rt, refusal(t, err)
		}
		rt.Mechanism = string(m)
	}
	if ra := decl.RunAs; ra != nil {
		id, err := sandbox.LookupIdentity(ra.User, ra.Group)
		if err != nil {
			return rt, refusal(t, err)
		}
		name := ra.User
		rt.RunAs = &manifest.Identity{User: name, UID: id.UID, GID: id.GID, Groups: id.Groups}
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
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return rt, fail("runtime.envdir", fmt.Sprintf("envdir %q does not exist", abs), "create it with one file per variable (daemontools envdir)")
		}
		rt.Envdir = filepath.ToSlash(dir)
	}
	if decl.Rundir != "" {
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
	return rt, nil
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
