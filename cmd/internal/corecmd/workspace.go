package corecmd

import (
	"fmt"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
)

// serverWorkspace checks, before a server (mcp, serve) takes its first
// call, the workspace its calls will run on: w (its --workspace or
// $TOOLBOX_WORKSPACE), else the toolbox file's default, else its current
// directory. When the lock names the workspace anywhere (a tool's paths or
// rundir, builtin "process"), one that cannot be used is an error now,
// said once with its fix, rather than a refusal of every call. It returns
// the resolved directory ("" when none and none is needed). Each call
// resolves it again (runspec.Trust.WithWorkspace).
func serverWorkspace(lockPath string, l *manifest.Lock, stateDir string, w runspec.Workspace) (string, error) {
	tr := runspec.NewTrust(lockPath, l, stateDir).WithWorkspace(w)
	if tr.WorkspaceErr != nil && runspec.UsesWorkspace(l) {
		return "", fmt.Errorf("the toolbox's tools work on a workspace: %w", tr.WorkspaceErr)
	}
	return tr.Workspace, nil
}
