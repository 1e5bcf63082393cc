package mcpconfig

import (
	"path/filepath"
	"strings"
)

// ProjectScoped reports whether c's file is the project's own (File puts
// it in the workspace: claude-code, cursor, vscode, gemini). Such a file
// is meant to be committed and used in every clone, wherever it is; the
// others (claude-desktop, codex) are the user's, on one machine.
func (c Client) ProjectScoped() bool {
	switch c {
	case ClaudeCode, Cursor, VSCode, Gemini:
		return true
	}
	return false
}

// WorkspaceVar is how a project-scoped client's file names the folder it
// has open, when the client expands one in a server's args: VS Code and
// Cursor expand ${workspaceFolder}; "" for a client that expands none
// (Claude Code, Gemini CLI start the server in the project's directory,
// so a path relative to it holds).
func (c Client) WorkspaceVar() string {
	switch c {
	case Cursor, VSCode:
		return "${workspaceFolder}"
	}
	return ""
}

// InProject returns path (absolute) as a project-scoped file of client c
// names it so that it holds in any clone of the project at workspace
// (absolute): relative to the workspace, after c's WorkspaceVar when it
// has one ("${workspaceFolder}/tools/toolbox.hcl"), else plainly relative
// ("tools/toolbox.hcl", "." for the workspace itself, "../toolbox.hcl"
// for a toolbox file beside it). A path on another volume stays absolute.
func InProject(c Client, workspace, path string) string {
	rel, err := filepath.Rel(workspace, path)
	if err != nil {
		return path
	}
	rel = filepath.ToSlash(rel)
	v := c.WorkspaceVar()
	switch {
	case v == "":
		return rel
	case rel == ".":
		return v
	}
	return v + "/" + rel
}

// bareCommand reports whether command is a program name to look up on
// PATH (no directory): what a project-scoped file names toolbox by.
func bareCommand(command string) bool {
	return command != "" && !strings.ContainsRune(command, filepath.Separator) && !strings.ContainsRune(command, '/')
}
