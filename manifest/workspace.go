package manifest

import (
	"path"
	"strings"

	"github.com/toolbox-dev/toolbox/protocol"
)

// workspaceUses checks what a lock says about the workspace (DESIGN.md §2,
// §4), which the compiler wrote from a validated describe document: every
// declared path and the rundir use protocol.WorkspaceToken only as
// WorkspacePath allows (a hand-edited "{workspace}/.." reaches nothing
// above the workspace: it is refused here, before any run), and a rundir
// naming the workspace is kept as the token form, cleaned.
func (v *validator) workspaceUses(at string, t *Tool, declared []string) {
	for _, p := range declared {
		if _, _, err := protocol.WorkspacePath(p); err != nil {
			v.addf("%s: %v", at, err)
		}
	}
	if r := t.Runtime.Rundir; strings.Contains(r, protocol.WorkspaceToken) {
		rel, _, err := protocol.WorkspacePath(r)
		switch {
		case err != nil:
			v.addf("%s: runtime.rundir: %v", at, err)
		case r != path.Join(protocol.WorkspaceToken, rel):
			v.addf("%s: runtime.rundir is %q, want it clean: %q", at, r, path.Join(protocol.WorkspaceToken, rel))
		}
	}
}

// lockWorkspace checks the toolbox file's default workspace as the lock
// keeps it: a clean slash path without the workspace token.
func (v *validator) lockWorkspace(l *Lock) {
	w := l.Workspace
	switch {
	case w == "":
	case strings.Contains(w, protocol.WorkspaceToken):
		v.addf("workspace is %q: the default workspace cannot name the workspace", w)
	case strings.ContainsRune(w, 0) || path.Clean(w) != w:
		v.addf("workspace is %q, want a clean slash path", w)
	}
}

// processWorkspace checks the builtin "process" paths that name the
// workspace, as workspaceUses does a tool's.
func (v *validator) processWorkspace(p *ProcessBuiltin) {
	if p == nil || p.Sandbox == nil || p.Sandbox.FS == nil {
		return
	}
	for _, list := range [][]string{p.Sandbox.FS.Read, p.Sandbox.FS.Write} {
		for _, x := range list {
			if _, _, err := protocol.WorkspacePath(x); err != nil {
				v.addf("builtin_process: %v", err)
			}
		}
	}
}
