package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/server/mcpconfig"
)

// WorkspaceEnv is the environment variable naming the workspace when
// --workspace is not given (the variable toolbox mcp reads too).
const WorkspaceEnv = runspec.WorkspaceEnv

// MCPConfigOptions are the inputs of mcp config.
type MCPConfigOptions struct {
	*Globals
	// Client is --client: one of mcpconfig.Clients.
	Client string
	// Workspace is --workspace: the project the client's toolbox mcp
	// confines tools to; "" means $TOOLBOX_WORKSPACE, else the current
	// directory.
	Workspace string
	// Write is --write: merge into the client's file instead of printing.
	Write bool
	// ClientFile is --client-file: the file --write merges into, instead
	// of the client's own (mcpconfig.File).
	ClientFile string
	// Name is --name: the server's key in the client's configuration.
	Name string
	// Executable returns the absolute path of the toolbox binary the
	// client will start; nil means ToolboxExecutable.
	Executable func() (string, error)
	// Now is the clock of the backup's name; nil means time.Now.
	Now func() time.Time
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Home returns the user's home directory; nil means os.UserHomeDir.
	Home func() (string, error)
}

// NewCmdMCPConfig builds `mcp config`; runF, when not nil, replaces its run
// (tests check flag parsing with it). Both binaries have it under their mcp
// command; the toolbox binary runs it itself.
func NewCmdMCPConfig(g *Globals, runF func(*MCPConfigOptions) error) *cobra.Command {
	opts := &MCPConfigOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "config --client CLIENT",
		Short: "Print (or --write) an MCP client's configuration that starts this toolbox",
		Long: `config prints what an MCP client needs to start "toolbox mcp" for this toolbox
file and workspace, in the client's own format: the toolbox binary, the
toolbox file (-f, $TOOLBOX_FILE, ./toolbox.hcl) and the workspace (--workspace, $TOOLBOX_WORKSPACE, the locked toolbox file's
workspace attribute, else the current directory), checked as toolbox mcp
checks it: a workspace taken from the current directory is refused when it is
your home directory or above it (name the project).

A project's file (claude-code, cursor, vscode, gemini: in the workspace, meant
to be committed) names them so that it holds in any clone: the toolbox file
and the workspace relative to the project (${workspaceFolder}/... for cursor
and vscode, which expand it; plain relative paths for claude-code and gemini,
which start the server in the project's directory), and toolbox by name when
the toolbox on PATH is this binary. A user's file (claude-desktop, codex, or
any --client-file) names them by absolute path.

--write merges it into the client's file instead: every other key is kept, a
server of the same --name is replaced, the old file is kept beside it as
FILE.toolbox-backup-<UTC time>, and the new one replaces it atomically. A
file toolbox cannot read (JSON with comments, unusual TOML) is left alone:
paste the printed entry by hand.

  claude-code     <workspace>/.mcp.json           (or: claude mcp add-json)
  claude-desktop  claude_desktop_config.json      (the user's: ~/Library/Application Support/Claude
                                                   on macOS, %APPDATA%\Claude, ~/.config/Claude)
  cursor          <workspace>/.cursor/mcp.json
  vscode          <workspace>/.vscode/mcp.json
  codex           $CODEX_HOME/config.toml         (default ~/.codex/config.toml)
  gemini          <workspace>/.gemini/settings.json

--client-file writes another file in the client's format (a user-wide one,
say).`,
		Example: `  toolbox mcp config --client claude-code --workspace ~/myproj
  toolbox -f toolboxes/default/toolbox.hcl mcp config --client codex --workspace ~/myproj --write`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return mcpConfigRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Client, "client", "", "the MCP client: "+mcpconfig.ClientNames())
	cmd.Flags().StringVar(&opts.Workspace, "workspace", "", "the project the tools work on (default $"+WorkspaceEnv+", the toolbox file's workspace, else the current directory)")
	cmd.Flags().BoolVar(&opts.Write, "write", false, "merge the entry into the client's configuration file (keeping a backup)")
	cmd.Flags().StringVar(&opts.ClientFile, "client-file", "", "with --write: the file to merge into instead of the client's own")
	cmd.Flags().StringVar(&opts.Name, "name", "toolbox", "the server's name in the client's configuration")
	return cmd
}

func mcpConfigRun(opts *MCPConfigOptions) error {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if opts.Client == "" {
		return &UsageError{Err: fmt.Errorf("--client is required: one of %s", mcpconfig.ClientNames())}
	}
	client, err := mcpconfig.ParseClient(opts.Client)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--client: %w", err)}
	}
	if opts.ClientFile != "" && !opts.Write {
		return &UsageError{Err: errors.New("--client-file names the file --write merges into; add --write")}
	}
	if err := opts.NeedToolboxFile(); err != nil {
		return err
	}
	toolboxFile, err := filepath.Abs(opts.ToolboxFile())
	if err != nil {
		return err
	}
	workspace, err := configWorkspace(opts.Workspace, getenv, manifest.LockPath(toolboxFile), opts.StateDirInUse())
	if err != nil {
		return err
	}
	exe := opts.Executable
	if exe == nil {
		exe = ToolboxExecutable
	}
	command, err := exe()
	if err != nil {
		return fmt.Errorf("finding the toolbox binary: %w", err)
	}
	// A project's file (committed, used in every clone) names the toolbox
	// file and the workspace relative to the project and toolbox by PATH;
	// a user's file (one machine) names them absolute.
	portable := client.ProjectScoped() && opts.ClientFile == ""
	fileArg, wsArg := toolboxFile, workspace
	if portable {
		fileArg, wsArg = mcpconfig.InProject(client, workspace, toolboxFile), mcpconfig.InProject(client, workspace, workspace)
		command = onPathAs(command)
	}
	args := []string{"mcp", "-f", fileArg, "--workspace", wsArg}
	if opts.StateDir != "" {
		dir, err := filepath.Abs(opts.StateDir)
		if err != nil {
			return err
		}
		args = append(args, "--state-dir", dir)
	}
	if opts.Sandbox != "" {
		args = append(args, "--sandbox", opts.Sandbox)
	}
	server := mcpconfig.Server{Name: opts.Name, Command: command, Args: args}
	if _, err := os.Stat(manifest.LockPath(toolboxFile)); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(opts.IO.Err, "note: %s has no lock yet: run `toolbox lock -f %s` before the client starts it\n", toolboxFile, toolboxFile)
	}
	file := opts.ClientFile
	if file == "" {
		home := opts.Home
		if home == nil {
			home = os.UserHomeDir
		}
		h, _ := home() // File says when it needs one
		if file, err = mcpconfig.File(client, mcpconfig.Places{Home: h, Workspace: workspace, GOOS: runtime.GOOS, Getenv: getenv}); err != nil {
			return fmt.Errorf("%w; name the file with --client-file", err)
		}
	} else if file, err = filepath.Abs(file); err != nil {
		return err
	}
	if !opts.Write {
		snippet, err := mcpconfig.Snippet(client, server)
		if err != nil {
			return err
		}
		if _, err := opts.IO.Out.Write(snippet); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Err, "%s reads this from %s; --write merges it there\n", client, file)
		portableNote(opts, client, portable, command, outsideRepo(workspace, toolboxFile))
		return nil
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	write := mcpconfig.Write
	if rel, err := filepath.Rel(workspace, file); err == nil && filepath.IsLocal(rel) {
		// The tools write the workspace: toolbox follows no link there.
		write = func(path string, c mcpconfig.Client, s mcpconfig.Server, t time.Time) (mcpconfig.Written, error) {
			return mcpconfig.WriteInWorkspace(workspace, path, c, s, t)
		}
	}
	w, err := write(file, client, server, now())
	if err != nil {
		var pe *mcpconfig.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%w\nthe file is left as it was; add the entry by hand (toolbox mcp config --client %s prints it)", err, client)
		}
		return err
	}
	switch {
	case w.Unchanged:
		fmt.Fprintf(opts.IO.Err, "%s already has server %q as it is\n", w.File, opts.Name)
	case w.Backup != "":
		fmt.Fprintf(opts.IO.Err, "wrote server %q to %s (the old file: %s)\n", opts.Name, w.File, w.Backup)
	default:
		fmt.Fprintf(opts.IO.Err, "wrote server %q to %s (a new file)\n", opts.Name, w.File)
	}
	portableNote(opts, client, portable, command, outsideRepo(workspace, toolboxFile))
	return nil
}

// portableNote says how a project's file holds in another clone: its paths
// are relative to the project (the client starts toolbox there, or expands
// its workspace variable), and toolbox must be on PATH; or, when the
// toolbox on PATH is not this binary, that the file names it absolute.
func portableNote(opts *MCPConfigOptions, client mcpconfig.Client, portable bool, command string, outside string) {
	if !portable {
		return
	}
	if outside != "" {
		fmt.Fprintf(opts.IO.Err, "note: %s; this file then holds only where the toolbox file sits at the same place beside the project: to commit it, keep the toolbox file and its lock in the project\n", outside)
		return
	}
	how := "relative to the project (" + string(client) + " starts toolbox in the project's directory)"
	if v := client.WorkspaceVar(); v != "" {
		how = "relative to " + v
	}
	if filepath.IsAbs(command) {
		fmt.Fprintf(opts.IO.Err, "note: the paths are %s, so the file can be committed; but the toolbox on PATH is not %s, so the file names it absolute: put toolbox on PATH and set \"command\": \"toolbox\" before committing it\n", how, command)
		return
	}
	fmt.Fprintf(opts.IO.Err, "note: the paths are %s and toolbox is found on PATH, so the file can be committed and used in any clone\n", how)
}

// onPathAs returns "toolbox" when the toolbox found on PATH is the binary
// at exe (the one a project's file would start), else exe itself.
func onPathAs(exe string) string {
	p, err := exec.LookPath("toolbox")
	if err != nil {
		return exe
	}
	a, errA := os.Stat(p)
	b, errB := os.Stat(exe)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return exe
	}
	return "toolbox"
}

// configWorkspace is the workspace the client's toolbox mcp is pinned
// to: flag, else the environment, else the default of the lock at
// lockPath (the toolbox file's workspace attribute; none when the lock
// cannot be read yet), else the current directory; resolved and refused
// as a call's is (runspec.Trust.WithWorkspace), so that a config written
// from the home directory does not turn that refused default into an
// explicit --workspace ~. The result is absolute, symlinks resolved.
func configWorkspace(flag string, getenv func(string) string, lockPath, stateDir string) (string, error) {
	w, err := runspec.ChooseWorkspace(flag, getenv(WorkspaceEnv))
	if err != nil {
		return "", err
	}
	l, err := manifest.Read(lockPath)
	if err != nil {
		l = nil // mcp reports it when the client starts it; the note says to lock
	}
	trust := runspec.NewTrust(lockPath, l, stateDir).WithWorkspace(w)
	if trust.WorkspaceErr != nil {
		return "", trust.WorkspaceErr
	}
	return trust.Workspace, nil
}

// ToolboxExecutable is the absolute path of the toolbox binary: this one
// (links resolved), or, when this is toolbox-core, the toolbox installed
// beside it (toolbox-core itself when there is none: it serves mcp too).
func ToolboxExecutable() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", err
	}
	if filepath.Base(self) == CoreName {
		beside := filepath.Join(filepath.Dir(self), "toolbox")
		if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	return self, nil
}

// outsideRepo says why a project file naming toolboxFile relative to the
// workspace would not hold in another clone: the toolbox file is outside
// the git repository holding the workspace (the nearest directory above
// it with a .git), or, without one, outside the workspace. "" when it is
// inside.
func outsideRepo(workspace, toolboxFile string) string {
	root, repo := workspace, false
	for dir := workspace; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			root, repo = dir, true
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if rel, err := filepath.Rel(root, toolboxFile); err == nil && filepath.IsLocal(rel) {
		return ""
	}
	if !repo {
		return fmt.Sprintf("the toolbox file %s is outside the project %s (which is in no git repository)", toolboxFile, workspace)
	}
	return fmt.Sprintf("the toolbox file %s is outside the project's git repository %s", toolboxFile, root)
}
