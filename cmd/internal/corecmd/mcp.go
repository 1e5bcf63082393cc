package corecmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/health"
	"github.com/toolbox-dev/toolbox/launcher/mcprun"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/probe/pluginprobe"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
	"github.com/toolbox-dev/toolbox/server/mcpserver"
)

// MCPOptions are the inputs of the mcp command.
type MCPOptions struct {
	*cli.Globals
	// Backends are --backend capability=tool overrides.
	Backends []string
	// Dir is -C/--dir: the working directory of the tools (and of
	// background commands); "" keeps the one the client started us in.
	Dir string
	// CallerEnv is the environment tools are built from; nil means
	// os.Environ().
	CallerEnv []string
	// Recheck is --recheck: re-run the checks of capability backends this
	// often and move a capability to the next locked backend whose check
	// passes (0 = never; the lock's results hold).
	Recheck time.Duration
	// MaxCalls is --max-calls: how many tool calls run at once; more wait
	// their turn (0 = mcpserver.DefaultMaxCalls, four per core).
	MaxCalls int
}

// NewCmdMCP builds the mcp command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdMCP(g *cli.Globals, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the locked toolbox to an MCP client over stdio",
		Long: `mcp serves the locked toolbox over the Model Context Protocol on stdin and
stdout until stdin closes; nothing else is ever written to stdout. Configure a
client with the command "toolbox mcp -f /path/to/toolbox.hcl": "toolbox mcp
config --client NAME" prints (or --write merges) that client's configuration.

Every capability and every tool not hidden behind one is an MCP tool (names
mapped for strict clients: kv.get becomes kv_get); each service gets a
<name>_send tool; "processes" and "inbox" manage what services and background
commands (builtin "process") started. Tools run exactly as ` + "`toolbox run`" + ` runs
them. The lock must exist and match the toolbox file (run ` + "`toolbox lock`" + `).

Tools work on a workspace, the project directory their sandbox names
{workspace}: --workspace DIR, else $TOOLBOX_WORKSPACE, else the toolbox file's
workspace attribute (relative to it), else the directory the client started
toolbox mcp in (many clients do not let you choose it: -C DIR changes to DIR
first; -f and --state-dir are read before). The root directory, system
directories and, when it comes from the current directory, your home
directory are refused: name the project. One lock serves any workspace.

Plugin tools are kept warm: a plugin's process is started by its first call
(its binary hashed against the lock), serves every later call of the
connection (up to its locked concurrency at once), is restarted with back-off
if it dies, and stops when the client disconnects. Exec tools start a
sandboxed process per call. At most --max-calls tool calls run at once (four
per core by default); the others wait their turn.

Processes stop when the client disconnects. Their records are kept in the
"mcp" directory of the state dir (--state-dir, else $XDG_STATE_HOME/toolbox,
else ~/.local/state/toolbox); when the default cannot be created, none are.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return mcpRun(cmd.Context(), opts)
		},
	}
	cmd.AddCommand(cli.NewCmdMCPConfig(g, nil))
	cmd.Flags().StringVarP(&opts.Dir, "dir", "C", "", "change to this directory first (the workspace when neither --workspace, $TOOLBOX_WORKSPACE nor the toolbox file names one)")
	cli.AddWorkspaceFlag(cmd, g)
	cmd.Flags().DurationVar(&opts.Recheck, "recheck", 0, "re-run capability backends' checks this often (e.g. 5m) and switch to the next locked backend whose check passes")
	cmd.Flags().StringArrayVar(&opts.Backends, "backend", nil, "capability=tool: serve the capability with this backend first (repeatable; unknown names are ignored)")
	addMaxCallsFlag(cmd, &opts.MaxCalls)
	return cmd
}

// addMaxCallsFlag adds --max-calls, the server's bound on tool calls at once.
func addMaxCallsFlag(cmd *cobra.Command, n *int) {
	cmd.Flags().IntVar(n, "max-calls", 0, fmt.Sprintf("run at most this many tool calls at once; the others wait their turn (default %d: four per core)", mcpserver.DefaultMaxCalls))
}

// checkMaxCalls refuses a negative --max-calls.
func checkMaxCalls(n int) error {
	if n < 0 {
		return &cli.UsageError{Err: fmt.Errorf("--max-calls %d: want 1 or more (0 for the default)", n)}
	}
	return nil
}

func mcpRun(ctx context.Context, opts *MCPOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	backends, err := backendOverrides(opts.Backends)
	if err != nil {
		return err
	}
	if err := checkMaxCalls(opts.MaxCalls); err != nil {
		return err
	}
	if err := opts.NeedToolboxFile(); err != nil {
		return err
	}
	lockPath, l, err := freshLock(opts.ToolboxFile())
	if err != nil {
		return err
	}
	env := opts.CallerEnv
	if env == nil {
		env = os.Environ()
	}
	if opts.StateDir != "" {
		if opts.StateDir, err = filepath.Abs(opts.StateDir); err != nil {
			return fmt.Errorf("--state-dir: %w", err)
		}
	}
	if opts.Dir != "" {
		if err := os.Chdir(opts.Dir); err != nil {
			return fmt.Errorf("-C: %w", err)
		}
		if pwd, err := os.Getwd(); err == nil {
			env = setEnv(env, "PWD", pwd)
		}
	}
	ws, err := opts.WorkspaceIn(env)
	if err != nil {
		return err
	}
	if _, err := serverWorkspace(lockPath, l, mcpStateDir(opts), ws); err != nil {
		return err
	}
	sup, err := newMCPSupervisor(opts, lockPath, l, env, ws)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(opts.IO.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := mcpserver.New(mcpserver.Options{
		LockPath: lockPath, Lock: l, Supervisor: sup, CallerEnv: env, Backends: backends,
		Logger: logger, Version: cli.Version(), StateDir: mcpStateDir(opts), MaxCalls: opts.MaxCalls, Workspace: ws,
	})
	if err != nil {
		closeSupervisor(opts, sup)
		return fmt.Errorf("%w; run `toolbox lock`", err)
	}
	// SIGINT, SIGTERM and SIGHUP (the terminal closed) end the connection
	// like a closed stdin does: the session's processes are stopped with
	// their declared cancel before the exit.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if opts.Recheck > 0 {
		m := health.New(health.Config{LockPath: lockPath, Lock: l, CallerEnv: env, TTL: opts.Recheck, Plugin: pluginprobe.Check, StateDir: mcpStateDir(opts), Workspace: ws, MCP: mcprun.Check})
		go m.Run(ctx, func(live *manifest.Lock) {
			for name, c := range live.Capabilities {
				if c.Active != l.Capabilities[name].Active {
					logger.Warn("live health: capability backend changed", "capability", name, "active", c.Active, "locked", l.Capabilities[name].Active)
				}
			}
			srv.SetLock(live)
		})
	}
	serr := srv.ServeIO(ctx, opts.IO.In, opts.IO.Out)
	srv.Close()
	closeSupervisor(opts, sup)
	return serr
}

// freshLock reads the lock of toolboxFile and refuses it, with the fix,
// when it is missing or the toolbox file's configuration changed since
// (launcher.VerifyToolboxFile, DESIGN.md §4).
// Each tool's binary is verified at each call.
func freshLock(toolboxFile string) (string, *manifest.Lock, error) {
	lockPath := manifest.LockPath(toolboxFile)
	if abs, err := filepath.Abs(lockPath); err == nil {
		lockPath = abs
	}
	l, err := manifest.Read(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("%s does not exist; run `toolbox lock` first", lockPath)
	}
	if err != nil {
		return "", nil, err
	}
	if err := launcher.VerifyToolboxFile(lockPath, l); err != nil {
		return "", nil, err
	}
	return lockPath, l, nil
}

// mcpStateSubdir is the directory under the state dir that holds the MCP
// server's process records and logs, apart from the daemon's: each toolbox
// mcp is a supervisor of its own, and the next one marks the processes of
// one that died lost.
const mcpStateSubdir = "mcp"

// mcpStateDir is the state directory the server uses (its records go to a
// subdirectory): hidden from every tool.
func mcpStateDir(opts *MCPOptions) string {
	if opts.StateDir != "" {
		return opts.StateDir
	}
	return wire.DefaultStateDir()
}

// newMCPSupervisor creates the supervisor of the session's processes. An
// explicit --state-dir that cannot be used is an error; the default one
// (the daemon's, wire.DefaultStateDir) falls back to keeping no records,
// with a warning.
func newMCPSupervisor(opts *MCPOptions, lockPath string, l *manifest.Lock, env []string, ws runspec.Workspace) (*supervisor.Supervisor, error) {
	cfg := supervisor.Config{
		Lock: l, LockPath: lockPath, CallerEnv: env, Workspace: ws,
		CompileSchema: compileSupervisorSchema,
		Hidden:        []string{mcpStateDir(opts)},
		Logf: func(format string, args ...any) {
			fmt.Fprintf(opts.IO.Err, "toolbox mcp: "+format+"\n", args...)
		},
	}
	// Records apart from the daemon's, but one host-wide count of live
	// processes with it (supervisor.Config.SlotsDir).
	if opts.StateDir != "" {
		cfg.StateDir = filepath.Join(opts.StateDir, mcpStateSubdir)
		cfg.SlotsDir = supervisor.DefaultSlotsDir(opts.StateDir)
		sup, err := supervisor.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("--state-dir %q: %w", opts.StateDir, err)
		}
		return sup, nil
	}
	if d := wire.DefaultStateDir(); d != "" {
		cfg.StateDir = filepath.Join(d, mcpStateSubdir)
		cfg.SlotsDir = supervisor.DefaultSlotsDir(d)
		sup, err := supervisor.New(cfg)
		if err == nil {
			return sup, nil
		}
		fmt.Fprintf(opts.IO.Err, "warning: %v; process records are not kept (set --state-dir)\n", err)
	}
	cfg.StateDir, cfg.SlotsDir = "", ""
	return supervisor.New(cfg)
}

// closeSupervisor stops whatever is left (nothing, normally: the session
// closed its processes), bounded so that a stuck process cannot keep the
// command from exiting.
func closeSupervisor(opts *MCPOptions, sup *supervisor.Supervisor) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sup.Close(ctx); err != nil {
		fmt.Fprintf(opts.IO.Err, "toolbox mcp: %v\n", err)
	}
}

// setEnv returns env with name set to value.
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

func backendOverrides(list []string) (map[string]string, error) {
	m := map[string]string{}
	for _, s := range list {
		c, t, ok := strings.Cut(s, "=")
		if !ok || c == "" || t == "" {
			return nil, &cli.UsageError{Err: fmt.Errorf("--backend %q: write capability=tool", s)}
		}
		m[c] = t
	}
	return m, nil
}

func compileSupervisorSchema(schema json.RawMessage) (supervisor.EventValidator, error) {
	return validate.CompileEventSchema(schema)
}
