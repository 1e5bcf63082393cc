package compiler

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"

	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
)

// workspace reads the root workspace attribute: the default workspace of
// the toolbox's calls (DESIGN.md §3), relative to the toolbox file unless
// absolute. It is kept as written, cleaned; whether it exists is a run's
// question (the workspace is resolved at each call), not the lock's.
func (l *loader) workspace(a *hcl.Attribute) {
	if a == nil {
		return
	}
	s, ok := l.str(a, "")
	if !ok {
		return
	}
	if _, named, err := protocol.WorkspacePath(s); s == "" || named || err != nil {
		l.add(at(a.Expr.Range(), "workspace", fmt.Sprintf("workspace is %q", s), "name a directory, relative to this file or absolute (the default workspace of every call; --workspace and $TOOLBOX_WORKSPACE override it)"))
		return
	}
	l.cfg.Workspace = filepath.ToSlash(filepath.Clean(s))
}

// probeWorkspace sets the workspace describe's and check's probes run on:
// Options.Workspace (check --probe --workspace), else a private empty
// directory, removed by the returned func. Probes then never read a
// project, and a lock made on one machine or in CI is the same for every
// project: the lock records no workspace (DESIGN.md §4).
func (p *prober) probeWorkspace() (func(), error) {
	if w := p.opts.Workspace; w.Dir != "" {
		p.trust.WithWorkspace(w)
		return func() {}, p.trust.WorkspaceErr
	}
	dir, err := os.MkdirTemp("", "toolbox-lock-workspace-")
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		p.trust.WorkspaceErr = fmt.Errorf("creating the private workspace of the probes: %w", err)
		return func() {}, nil
	}
	p.trust.Workspace, p.private = dir, true
	return func() { _ = os.RemoveAll(dir) }, nil
}

// makeWorkspacePaths creates, in the private workspace of a lock, the
// directories a tool declares below the workspace, so that its check runs
// and its confinement is checked as in a project that has them. In a real
// workspace (check --probe --workspace) nothing is created: a missing one
// is reported as a run would.
func (p *prober) makeWorkspacePaths(d *protocol.Describe) {
	if d.Runtime == nil || d.Runtime.Sandbox == nil {
		return
	}
	p.makeWorkspaceFS(d.Runtime.Sandbox.FS)
}

// makeWorkspaceFS is makeWorkspacePaths for the fs paths of a sandbox
// (a tool's, an MCP server's).
func (p *prober) makeWorkspaceFS(fs *protocol.FS) {
	if !p.private || fs == nil {
		return
	}
	for _, path := range append(append([]string(nil), fs.Read...), fs.Write...) {
		if r, named, err := runspec.ResolvePath("/", path, p.trust.Workspace, nil); named && err == nil {
			_ = os.MkdirAll(r, 0o755)
		}
	}
}
