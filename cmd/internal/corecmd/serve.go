package corecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/server/daemon"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// serveCloseTimeout bounds the stop of every process at exit (each gets
// its declared cancel, then SIGKILL after its own timeout.stop).
const serveCloseTimeout = time.Minute

// ServeOptions are the inputs of the serve command.
type ServeOptions struct {
	*cli.Globals
	// LogBytes > 0 keeps each process's full output in log files under the
	// state dir, each capped at this many bytes.
	LogBytes int64
	// Signals, when set, replaces SIGINT, SIGTERM and SIGHUP as what ends the
	// daemon (tests cancel a context instead).
	Signals func(context.Context) (context.Context, context.CancelFunc)
	// MCPHTTP is --mcp-http: a loopback address (127.0.0.1:PORT, [::1]:PORT,
	// localhost:PORT) on which MCP is also served over streamable HTTP at
	// /mcp; "" for none.
	MCPHTTP string
	// MCPUnix is --mcp-unix: also serve MCP over streamable HTTP on
	// <state dir>/mcp.sock (mode 0600), to peers of this uid only.
	MCPUnix bool
	// MCPTokenFile is --mcp-token-file: the file holding the bearer token
	// every --mcp-http request must carry; "" means <state dir>/mcp.token,
	// created (random, mode 0600) when missing.
	MCPTokenFile string
	// MCPAllowOrigins is --mcp-allow-origin: origins (scheme://host[:port])
	// allowed besides the server's own; a request naming another Origin is
	// refused with 403.
	MCPAllowOrigins []string
	// Recheck is --recheck: live health for the MCP clients (see mcp).
	Recheck time.Duration
	// MaxCalls is --max-calls: how many MCP tool calls run at once (see
	// mcp).
	MaxCalls int
}

// NewCmdServe builds the serve command; runF, when not nil, replaces its
// run (tests check flag parsing with it).
func NewCmdServe(g *cli.Globals, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon that owns services and background commands for the CLI",
		Long: `serve runs the daemon the process commands talk to (toolbox start, send,
processes, inbox). It runs tools from the lock of -f (refused, with the fix,
when missing or older than the toolbox file; re-read when ` + "`toolbox lock`" + ` rewrites
it) and listens on <state dir>/serve.sock until SIGTERM, SIGINT or SIGHUP, then
stops every process with its declared cancel and exits.

The state dir is --state-dir, else $XDG_STATE_HOME/toolbox, else
~/.local/state/toolbox. It is created mode 0700 and must not be reachable by
others; the socket is mode 0600 and the daemon answers only its own user
(checked with SO_PEERCRED). One daemon per state dir: a second one is refused.
Process records survive the daemon; a daemon that starts after one was killed
marks the processes it finds unfinished as lost (they are not restarted).

With --mcp-http ADDR it also serves MCP over streamable HTTP at
http://ADDR/mcp, to clients that send the header
  Authorization: Bearer <token>
The token is read from --mcp-token-file, else from <state dir>/mcp.token,
which serve creates (32 random bytes, hex, mode 0600) when it is missing and
whose path it prints at start. A request without the token gets 401; one
whose Origin header is not the server's own (or an --mcp-allow-origin) gets
403, so a web page cannot call it. --mcp-unix serves the same on
<state dir>/mcp.sock to this user only (SO_PEERCRED), without a token.
Each MCP session keeps its plugins warm, as toolbox mcp does, and at most
--max-calls tool calls run at once across sessions.

Run it in the background of a shell:
  toolbox serve -f /path/to/toolbox.hcl &
or under systemd, without a unit file:
  systemd-run --user --unit toolbox toolbox serve -f /path/to/toolbox.hcl

It prints what it starts and stops on stderr, nothing on stdout.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.MCPHTTP, "mcp-http", "", "also serve MCP over streamable HTTP on this loopback address, e.g. 127.0.0.1:8765 (path /mcp); clients send Authorization: Bearer <token>")
	cmd.Flags().BoolVar(&opts.MCPUnix, "mcp-unix", false, "also serve MCP over streamable HTTP on <state dir>/mcp.sock (mode 0600; this user only, no token)")
	cmd.Flags().StringVar(&opts.MCPTokenFile, "mcp-token-file", "", "with --mcp-http: the file holding the bearer token (default <state dir>/mcp.token, created when missing)")
	cmd.Flags().StringSliceVar(&opts.MCPAllowOrigins, "mcp-allow-origin", nil, "with --mcp-http/--mcp-unix: also accept requests whose Origin header is this scheme://host[:port] (repeatable)")
	cmd.Flags().DurationVar(&opts.Recheck, "recheck", 0, "with --mcp-http/--mcp-unix: re-run capability backends' checks this often and switch to the next locked backend whose check passes")
	cmd.Flags().Int64Var(&opts.LogBytes, "log-bytes", 0, "also keep each process's full output in log files under the state dir, each capped at this many bytes (0: none)")
	addMaxCallsFlag(cmd, &opts.MaxCalls)
	cli.AddWorkspaceFlag(cmd, g)
	return cmd
}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.LogBytes < 0 {
		return &cli.UsageError{Err: fmt.Errorf("--log-bytes %d: want 0 or more", opts.LogBytes)}
	}
	if err := checkMaxCalls(opts.MaxCalls); err != nil {
		return err
	}
	stateDir, err := wire.StateDir(opts.StateDir)
	if err != nil {
		return err
	}
	if err := opts.NeedToolboxFile(); err != nil {
		return err
	}
	lf, err := daemon.ReadLock(opts.ToolboxFile())
	if err != nil {
		return err
	}
	ws, err := opts.ChosenWorkspace()
	if err != nil {
		return err
	}
	wsDir, err := serverWorkspace(lf.Path, lf.Lock, stateDir, ws)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(opts.IO.Err, "toolbox serve: "+format+"\n", args...)
	}
	srv, err := daemon.Listen(daemon.Options{StateDir: stateDir, Lock: lf, Logf: logf})
	if err != nil {
		return err
	}
	defer srv.Close()
	sup, err := supervisor.New(supervisor.Config{
		StateDir: stateDir, Hidden: serveHidden(opts), Lock: lf.Lock, LockPath: lf.Path, CallerEnv: os.Environ(), Workspace: ws,
		CompileSchema: compileServeSchema, LogBytes: opts.LogBytes, Logf: logf,
	})
	if err != nil {
		return err
	}
	notify := opts.Signals
	if notify == nil {
		notify = func(ctx context.Context) (context.Context, context.CancelFunc) {
			return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		}
	}
	sctx, stop := notify(ctx)
	defer stop()
	logf("listening on %s (pid %d, lock %s)", srv.Socket(), os.Getpid(), lf.Path)
	if wsDir != "" {
		logf("workspace %s (a start or command may name another with --workspace)", wsDir)
	}
	closeMCP := func() {}
	if opts.MCPHTTP != "" || opts.MCPUnix {
		if closeMCP, err = serveMCPHTTP(sctx, opts, stateDir, lf.Path, lf.Lock, sup, ws, logf); err != nil {
			return err
		}
	}
	serr := srv.Serve(sctx, sup)
	stop() // a second signal now kills at once
	logf("stopping every process")
	// Every process stops at once, each with its declared cancel then
	// SIGKILL after its own stop grace: the MCP calls in flight (which the
	// supervisor does not own) and the supervisor's processes alike.
	mcpClosed := make(chan struct{})
	go func() {
		defer close(mcpClosed)
		closeMCP()
	}()
	cctx, cancel := context.WithTimeout(context.Background(), serveCloseTimeout)
	defer cancel()
	if err := sup.Close(cctx); err != nil {
		logf("closing: %v", err)
	}
	<-mcpClosed
	return serr
}

// compileServeSchema wires the JSON Schema compiler into the supervisor
// (which links none itself).
func compileServeSchema(schema json.RawMessage) (supervisor.EventValidator, error) {
	return validate.CompileEventSchema(schema)
}
