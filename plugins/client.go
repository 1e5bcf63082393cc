package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// DefaultStartTimeout bounds the handshake when Options.StartTimeout is 0.
const DefaultStartTimeout = 10 * time.Second

// Options tune Start. The zero value gives the documented defaults.
type Options struct {
	// StartTimeout bounds the time from starting the process to its
	// handshake line; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
	// Dir is the plugin's working directory; "" means the caller's under
	// no sandbox (under one, see sandbox.Command: it must lie inside a
	// granted path).
	Dir string
	// Stderr, when non-nil, receives a copy of everything the plugin writes
	// to its stderr (its logs), one Write at a time from a goroutine of the
	// Client; write errors are ignored. The last 4 KiB are kept regardless
	// and quoted in errors.
	Stderr io.Writer
	// SocketDir is the directory under which go-plugin creates the plugin's
	// socket directory; "" means SocketBase(). The plugin's socket path
	// must fit a unix socket address (108 bytes), so Start refuses a
	// SocketDir longer than MaxSocketBase.
	SocketDir string
	// Exe, when set, is the plugin binary opened and checked by the caller
	// (sandbox.OpenExecutable, for the path given to Start): the plugin is
	// executed from that descriptor (sandbox.Command.Exe). The caller
	// closes it after Start returns.
	Exe *sandbox.Executable
}

// Client is a started plugin. Its methods are safe for concurrent use. It
// must be closed; Close is idempotent.
type Client struct {
	path    string
	pc      *plugin.Client
	r       *procRunner
	tool    pb.ToolClient
	version int

	closeOnce sync.Once
	closed    chan struct{}
}

// Start starts the plugin at path with Options{} (see Options.Start).
func Start(ctx context.Context, path string, spec *sandbox.Spec, env []string) (*Client, error) {
	return Options{}.Start(ctx, path, spec, env)
}

// Start starts the plugin at path (absolute) under spec (nil: unconfined)
// with env as its complete environment: nothing of the caller's environment
// is added, only go-plugin's handshake variables. It returns once the
// handshake has completed and the Tool service is dispensed.
//
// The plugin gets no stdin and runs as the leader of its own process group.
// The binary is not verified here: the caller checks it against the lock
// before calling Start.
//
// Errors, each naming the plugin and the reason: ErrNotPlugin,
// ErrProtocolVersion, ErrStdoutBeforeHandshake, ErrStartTimeout, ctx's
// error when ctx ends first, or a wrapped exec error when the file cannot
// be started. On error nothing is left running.
//
// The go-plugin client is managed: a program calling Start must defer
// plugin.CleanupClients() in its main function. go-plugin keeps a managed
// client for the life of the process, even once closed (a few KiB each).
// Under the landlock mechanism the calling binary is re-executed as the
// sandbox helper: its main must call sandbox.Init first.
func (o Options) Start(ctx context.Context, path string, spec *sandbox.Spec, env []string) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting plugin %q: %w", path, err)
	}
	base := socketBase(o.SocketDir)
	if err := checkSocketBase(base); err != nil {
		return nil, fmt.Errorf("starting plugin %q: %w", path, err)
	}
	timeout := o.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	c := &Client{path: path, closed: make(chan struct{})}
	// The runner is made by go-plugin's goroutine; abort stops it when ctx
	// ends before the handshake.
	var made atomic.Pointer[procRunner]
	abort := make(chan struct{})
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          PluginSet(nil),
		AllowedProtocols: AllowedProtocols,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "plugin",
			Output: io.Discard,
			Level:  hclog.Off,
		}),
		StartTimeout: timeout,
		Stderr:       io.Discard,
		SyncStdout:   io.Discard,
		// What the plugin writes to os.Stderr after Serve arrives over
		// go-plugin's stdio stream: keep it with the rest of its stderr.
		SyncStderr:  stderrSink{&made},
		SkipHostEnv: true,
		Managed:     true,
		UnixSocketConfig: &plugin.UnixSocketConfig{
			TempDir: base,
		},
		// go-plugin dials the handshake's address by path, following a
		// link the plugin may have put there: dial it ourselves (dialSocket).
		GRPCDialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			r := made.Load()
			if r == nil {
				return nil, errors.New("dialing a plugin that did not start")
			}
			_, line, _ := r.hs.snapshot()
			hs, ok := parseHandshake(line)
			if !ok || !hs.addressInside(r.hs.socketDir) {
				return nil, fmt.Errorf("dialing plugin %q: %w", path, ErrHandshakeAddress)
			}
			return dialSocket(ctx, r.hs.socketDir, filepath.Base(hs.address))
		})},
		RunnerFunc: func(_ hclog.Logger, gp *exec.Cmd, socketDir string) (runner.Runner, error) {
			cmd, release, prep, err := pluginCmd(path, o.Exe, spec, socketDir, o.Dir, append(slices.Clone(env), gp.Env...))
			if err != nil {
				return nil, err
			}
			r := newProcRunner(path, cmd, release, o.Stderr, abort)
			r.hs.socketDir = socketDir
			r.prepThread = prep
			made.Store(r)
			return r, nil
		},
	}
	c.pc = plugin.NewClient(cfg)

	begun := time.Now()
	result := make(chan error, 1)
	go func() {
		_, err := c.pc.Start()
		result <- err
	}()
	var err error
	select {
	case err = <-result:
	case <-ctx.Done():
		close(abort)
		<-result
		c.pc.Kill()
		return nil, fmt.Errorf("starting plugin %q: %w", path, ctx.Err())
	}
	c.r = made.Load()
	if err != nil {
		c.pc.Kill()
		return nil, c.startError(err, time.Since(begun) >= timeout, timeout)
	}
	c.version = c.pc.NegotiatedVersion()
	proto, err := c.pc.Client()
	if err == nil {
		var raw any
		raw, err = proto.Dispense(PluginName)
		if err == nil {
			var ok bool
			if c.tool, ok = raw.(pb.ToolClient); !ok {
				err = fmt.Errorf("dispensed %T, want a Tool client", raw)
			}
		}
	}
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("connecting to plugin %q: %w", path, err)
	}
	return c, nil
}

// stderrSink appends what go-plugin's stdio stream carries to the runner's
// stderr tail.
type stderrSink struct{ r *atomic.Pointer[procRunner] }

func (s stderrSink) Write(p []byte) (int, error) {
	if r := s.r.Load(); r != nil {
		_, _ = r.stderr.Write(p)
		if r.extraStderr != nil {
			_, _ = r.extraStderr.Write(p)
		}
	}
	return len(p), nil
}

// startError turns go-plugin's failed start into one of this package's
// errors, using what the runner saw on the plugin's stdout and stderr.
func (c *Client) startError(err error, timedOut bool, timeout time.Duration) error {
	if c.r == nil {
		return fmt.Errorf("starting plugin %q: %w", c.path, err)
	}
	// go-plugin has killed the group; wait for the reaper so that how the
	// plugin ended is known.
	<-c.r.done
	if c.r.state == nil {
		// It never started (not found, not executable): err says why.
		return err
	}
	junk, line, badAddr := c.r.hs.snapshot()
	stderr := c.r.stderrTail()
	switch {
	case badAddr != "":
		return fmt.Errorf("starting plugin %q: %w: its handshake names %q; a plugin serves only on a unix socket in the directory toolbox made for it (serve with plugins/sdk, which does)",
			c.path, ErrHandshakeAddress, badAddr)
	case junk != "" && line != "":
		return fmt.Errorf("starting plugin %q: %w: it printed %q first; a plugin must write nothing to stdout before serving (log to stderr)",
			c.path, ErrStdoutBeforeHandshake, junk)
	case junk != "":
		return fmt.Errorf("starting plugin %q: %w: it printed %q on stdout instead of a go-plugin handshake%s",
			c.path, ErrNotPlugin, junk, stderrNote(stderr))
	case line != "":
		if hs, ok := parseHandshake(line); ok {
			if why := hs.mismatch(); why != "" {
				return fmt.Errorf("starting plugin %q: %w: %s", c.path, ErrProtocolVersion, why)
			}
		}
		return fmt.Errorf("starting plugin %q: %w%s", c.path, err, stderrNote(stderr))
	case timedOut:
		return fmt.Errorf("starting plugin %q: %w: no handshake within %s%s", c.path, ErrStartTimeout, timeout, stderrNote(stderr))
	default:
		return fmt.Errorf("starting plugin %q: %w: it ended (%s) without a handshake%s",
			c.path, ErrNotPlugin, c.r.exitDescription(0), stderrNote(stderr))
	}
}

// stderrNote formats a stderr tail for the end of an error message.
func stderrNote(stderr string) string {
	if stderr == "" {
		return ""
	}
	return fmt.Sprintf("; stderr: %q", stderr)
}

// ProtocolVersion is the plugin protocol version negotiated at the
// handshake (ProtocolVersion today); the lock records it.
func (c *Client) ProtocolVersion() int { return c.version }

// Pid is the process id, also the process group id, of the process that
// runs the plugin: bwrap, or the sandbox helper (landlock, and none without
// a sandbox: see package sandbox); the plugin is below it.
func (c *Client) Pid() int { return int(c.r.pid.Load()) }

// Stderr returns the last 4 KiB the plugin wrote to its stderr.
func (c *Client) Stderr() string { return c.r.stderrTail() }

// Done is closed once the plugin process has exited and been reaped.
func (c *Client) Done() <-chan struct{} { return c.r.done }

// closeGrace bounds the graceful part of Close. go-plugin's own stop waits
// up to 2 s for the plugin to exit after its shutdown call, but the call
// itself has no deadline: a plugin that no longer answers (stopped, wedged)
// would hold Close forever.
const closeGrace = 3 * time.Second

// Close asks the plugin to shut down (go-plugin's graceful stop), kills its
// whole process group after at most closeGrace (3 s), and waits until the
// plugin is reaped. Calls in flight fail. Safe to call more than once and
// concurrently; it returns nil.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		stopped := make(chan struct{})
		go func() {
			c.pc.Kill()
			close(stopped)
		}()
		t := time.NewTimer(closeGrace)
		defer t.Stop()
		select {
		case <-stopped:
		case <-t.C:
			_ = c.r.Kill(context.Background())
			<-stopped
		}
		_ = c.r.Kill(context.Background())
		<-c.r.done
	})
	return nil
}

// Kill kills the plugin's whole process group at once, without a graceful
// stop, and waits until it is reaped. Calls in flight fail. Safe to call
// more than once, and after or concurrently with Close.
func (c *Client) Kill() {
	_ = c.r.Kill(context.Background())
	c.closeOnce.Do(func() {
		close(c.closed)
		c.pc.Kill()
	})
	<-c.r.done
}

// SocketBase is the directory under which a plugin started with
// Options.SocketDir "" gets its socket directory: go-plugin makes one
// "plugin-dir*" directory there per start (mode 0700, a random name),
// which the plugin's sandbox grants writable (sandbox.Spec.ForPlugin).
// It is os.TempDir() when that is at most MaxSocketBase bytes long and
// every directory on its path is searchable by all (a plugin run as
// another user must reach its socket), else /tmp.
func SocketBase() string { return socketBase("") }

// The plugin's socket is <base>/plugin-dirN/pluginM, N and M each at most
// 10 decimal digits (go-plugin names them with os.MkdirTemp and
// os.CreateTemp), and a unix socket path holds at most 107 bytes (108
// with its NUL, unix(7)); go-plugin binds the path itself, so it must fit.
const (
	maxSocketPath = 107
	socketName    = len("/plugin") + 10
	socketDirName = len("/plugin-dir") + 10
	// MaxSocketDir is the longest socket directory (the plugin's
	// PLUGIN_UNIX_SOCKET_DIR) whose socket path fits.
	MaxSocketDir = maxSocketPath - socketName
	// MaxSocketBase is the longest Options.SocketDir (or SocketBase)
	// under which every socket path fits.
	MaxSocketBase = MaxSocketDir - socketDirName
)

func socketBase(dir string) string {
	if dir != "" {
		return dir
	}
	if t := os.TempDir(); len(t) <= MaxSocketBase && searchableByAll(t) {
		return t
	}
	return "/tmp"
}

// checkSocketBase refuses a socket base too long for the socket path.
func checkSocketBase(base string) error {
	if len(base) > MaxSocketBase {
		return fmt.Errorf("plugin socket directory %q is %d bytes long: the plugin's socket under it (+%d bytes) would exceed the %d bytes of a unix socket path; choose a directory of at most %d bytes", base, len(base), socketDirName+socketName, maxSocketPath, MaxSocketBase)
	}
	return nil
}

// searchableByAll reports whether every directory from / to dir grants
// search (x) to others.
func searchableByAll(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" || d == "." {
			return true
		}
	}
}

// callError wraps a failed RPC. When the connection broke, it waits a
// little for the plugin to be reaped, so that the error can say how the
// plugin ended and what it wrote to stderr.
func (c *Client) callError(what string, err error) error {
	select {
	case <-c.closed:
		return fmt.Errorf("%s plugin %q: %w", what, c.path, ErrClosed)
	default:
	}
	wait := time.Duration(0)
	if status.Code(err) == codes.Unavailable {
		wait = 2 * time.Second
	}
	if exited := c.r.exitDescription(wait); exited != stillRunning {
		return fmt.Errorf("%s plugin %q: %w (%s)%s", what, c.path, ErrPluginExited, exited, stderrNote(c.r.stderrTail()))
	}
	return fmt.Errorf("%s plugin %q: %w", what, c.path, err)
}
