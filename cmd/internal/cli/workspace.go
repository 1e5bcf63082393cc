package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/runspec"
)

// workspaceUsage is the help of --workspace, shared by every command that
// takes it.
const workspaceUsage = "the project directory the tools work on: what {workspace} names in their sandbox (default $TOOLBOX_WORKSPACE, else the toolbox file's workspace, else the current directory)"

// daemonWorkspaceUsage is the help of --workspace on the commands the
// daemon carries out (start, processes run): without one, the workspace
// the daemon was started with applies, not this command's directory.
const daemonWorkspaceUsage = "the project directory the tools work on: what {workspace} names in their sandbox (default $TOOLBOX_WORKSPACE, else the daemon's workspace)"

// AddWorkspaceFlag adds --workspace DIR to cmd, into g.Workspace.
func AddWorkspaceFlag(cmd *cobra.Command, g *Globals) {
	cmd.Flags().StringVar(&g.Workspace, "workspace", "", workspaceUsage)
}

// AddDaemonWorkspaceFlag is AddWorkspaceFlag for a command the daemon
// carries out.
func AddDaemonWorkspaceFlag(cmd *cobra.Command, g *Globals) {
	cmd.Flags().StringVar(&g.Workspace, "workspace", "", daemonWorkspaceUsage)
}

// ChosenWorkspace is --workspace, else $TOOLBOX_WORKSPACE, made absolute
// (runspec.ChooseWorkspace); the zero Workspace when neither is set, which
// leaves the toolbox file's default, else the current directory. It is
// resolved, and refused when unusable, by each call (DESIGN.md §7).
func (g *Globals) ChosenWorkspace() (runspec.Workspace, error) {
	return chooseWorkspace(g.Workspace, os.Getenv(runspec.WorkspaceEnv))
}

// chosenWorkspace is ChosenWorkspace with the command's environment
// (DaemonOptions.Getenv in tests): what a start or a background command
// asks the daemon for. The zero Workspace leaves the daemon's own.
func (o *DaemonOptions) chosenWorkspace() (runspec.Workspace, error) {
	return chooseWorkspace(o.Workspace, o.getenv(runspec.WorkspaceEnv))
}

// chooseWorkspace is runspec.ChooseWorkspace with its error a usage error.
func chooseWorkspace(flag, env string) (runspec.Workspace, error) {
	w, err := runspec.ChooseWorkspace(flag, env)
	if err != nil {
		return runspec.Workspace{}, &UsageError{Err: err}
	}
	return w, nil
}

// WorkspaceIn is ChosenWorkspace for a server whose caller environment is
// env ("K=V" entries, a later one winning), not necessarily this process's.
func (g *Globals) WorkspaceIn(env []string) (runspec.Workspace, error) {
	return chooseWorkspace(g.Workspace, runspec.WorkspaceEnvIn(env))
}
