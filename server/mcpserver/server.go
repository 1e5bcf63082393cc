package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/mcprun"
	"github.com/toolbox-dev/toolbox/launcher/pluginrun"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/mcpbackend"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// Options configure a Server. LockPath, Lock and Supervisor are required.
type Options struct {
	// LockPath is the path of toolbox.lock.json (made absolute by New);
	// paths in the lock are relative to its directory.
	LockPath string
	// Lock is the lock at LockPath, already read (manifest.Read). The
	// server serves exactly its catalog; it re-reads nothing.
	Lock *manifest.Lock
	// Supervisor owns the processes of every connection: services, their
	// sends, background commands, mail. New points it at Lock and LockPath
	// (Supervisor.SetLock); give it Config.CompileSchema so that sent
	// events are checked against their schema. The caller closes it after
	// the server is done.
	Supervisor *supervisor.Supervisor
	// CallerEnv is the environment tools are built from (runspec's rules;
	// usually os.Environ()).
	CallerEnv []string
	// Backends are --backend overrides, capability → tool (launcher.Resolve).
	Backends map[string]string
	// Logger receives the SDK's and the server's diagnostics; nil discards
	// them. It must not write to stdout when serving stdio.
	Logger *slog.Logger
	// Version is the server version announced to clients ("" means "dev").
	Version string
	// StreamKeep is how many of the last events a stream tool's result
	// holds (0 means supervisor.DefaultStreamKeep).
	StreamKeep int
	// ProgressInterval is how often long waits send a progress
	// notification when the client gave a progress token (0 means
	// DefaultProgressInterval; negative disables the heartbeat, not the
	// progress of stream events).
	ProgressInterval time.Duration
	// MaxTextBytes caps a text result (0 means DefaultMaxTextBytes); the
	// text is cut on a character boundary and says so.
	MaxTextBytes int
	// Plugins runs plugin tools; nil means warm plugins (pluginrun.Warm,
	// DESIGN.md §5): one process per connection and plugin tool, started
	// by its first call and stopped when the connection ends.
	// pluginrun.Runner{} starts one per call instead.
	Plugins launcher.PluginRunner
	// StateDir is toolbox's state directory in use ("" for none): no tool
	// may reach it (launcher.Request.StateDir).
	StateDir string
	// Hidden are more paths no tool may reach (launcher.Request.Hidden).
	Hidden []string
	// Workspace is the server's workspace (--workspace or
	// $TOOLBOX_WORKSPACE; the zero value takes the toolbox file's
	// default, else the current directory), resolved at each call
	// (launcher.Request.Workspace). Give the Supervisor the same.
	Workspace runspec.Workspace
	// MaxCalls bounds the tool calls that run at once across every
	// connection (a oneshot or stream call until it ends, a service while
	// it starts); more wait their turn, with progress notifications. 0
	// means DefaultMaxCalls.
	MaxCalls int
	// MCP calls the tools of the lock's MCP servers; nil means a
	// mcprun.Pool of the server's own: one warm server per connection
	// and server, stopped when the connection ends (and all of them by
	// Close). A runner given here that has a CloseOwner(session string)
	// method is told of every connection's end the same way.
	MCP launcher.MCPRunner
}

// Server is the MCP server of one locked toolbox. It is safe for
// concurrent use by any number of connections; each connection gets its
// own supervisor session.
type Server struct {
	opts     Options
	lock     *manifest.Lock
	lockPath string
	sup      *supervisor.Supervisor
	pool     *pluginrun.Pool // warm plugins, an owner per connection
	slots    callSlots
	lockFile lockFile
	backends launcher.MCPRunner
	ownPool  *mcprun.Pool // the default MCP runner, closed by Close
	log      *slog.Logger
	mcp      *mcp.Server
	names    []string
	seq      atomic.Int64 // numbers binary results' URIs

	mu     sync.Mutex
	conns  map[*mcp.ServerSession]*conn
	closed bool
	// served maps the connections of Serve to its context (see
	// cancelOnShutdown); life ends at Close and cancels every request.
	served  map[*mcp.ServerSession]context.Context
	life    context.Context
	endLife context.CancelFunc

	// lockMu guards lock, which SetLock replaces (live health).
	lockMu sync.RWMutex
}

// SetLock replaces the lock the server runs tools from with l, a lock of
// the same tools whose probe results and active backends changed (live
// health, launcher/health): later calls of a capability go to its new
// active backend. The tool list is unchanged: capabilities keep their
// names and schemas, whichever backend serves them.
func (s *Server) SetLock(l *manifest.Lock) {
	s.lockMu.Lock()
	s.lock = l
	s.lockMu.Unlock()
	s.sup.SetLock(s.lockPath, l)
}

// currentLock is the lock calls run from.
func (s *Server) currentLock() *manifest.Lock {
	s.lockMu.RLock()
	defer s.lockMu.RUnlock()
	return s.lock
}

// InboxURI is the resource that holds the reading connection's mail (the
// newest MaxInbox mails, as JSON, like the inbox tool's answer). Clients
// that subscribe to it get a resources/updated notification when mail
// arrives.
const InboxURI = "toolbox://inbox"

// Instructions is what the server tells clients about itself.
const instructions = `These tools come from a locked toolbox: each runs exactly as the lock says (hash-checked, sandboxed as declared). ` +
	`A failed tool returns an error result with its exit code and the tail of its stderr. ` +
	`A service tool returns a process handle; talk to it with its <name>_send tool, and list, read or stop processes with "processes". ` +
	`Service events and process completions are mailed to this session: read them with "inbox" (they are also sent as logging notifications from logger "toolbox").`

// New builds the server of opts.Lock: one MCP tool per catalog entry,
// per service's send companion and per built-in tool the lock enables
// (see mcpnames.ToolNames). Errors: a required option is missing, or the lock's
// names collide once mapped for MCP clients (a *mcpnames.NameError for each,
// joined; the fix is to rename and run `toolbox lock`).
func New(opts Options) (*Server, error) {
	switch {
	case opts.Lock == nil:
		return nil, errors.New("building the MCP server: no lock")
	case opts.LockPath == "":
		return nil, errors.New("building the MCP server: no lock path")
	case opts.Supervisor == nil:
		return nil, errors.New("building the MCP server: no process supervisor")
	}
	lockPath, err := filepath.Abs(opts.LockPath)
	if err != nil {
		return nil, fmt.Errorf("building the MCP server: %w", err)
	}
	names, err := mcpnames.ToolNames(opts.Lock)
	if err != nil {
		return nil, fmt.Errorf("building the MCP server: %w", err)
	}
	if opts.StreamKeep <= 0 {
		opts.StreamKeep = supervisor.DefaultStreamKeep
	}
	if opts.ProgressInterval == 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = DefaultMaxCalls
	}
	s := &Server{
		opts: opts, lock: opts.Lock, lockPath: lockPath, sup: opts.Supervisor,
		slots: make(callSlots, opts.MaxCalls), log: opts.Logger, names: names,
		conns:  map[*mcp.ServerSession]*conn{},
		served: map[*mcp.ServerSession]context.Context{},
	}
	s.life, s.endLife = context.WithCancel(context.Background())
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.lockFile.stamp, _ = stampLock(lockPath)
	s.pool = newPluginPool(func(format string, args ...any) { s.log.Warn(fmt.Sprintf(format, args...)) })
	s.backends = opts.MCP
	if s.backends == nil {
		s.ownPool = mcprun.NewPool(mcpbackend.Launch{}, func(format string, args ...any) {
			s.log.Warn(fmt.Sprintf(format, args...))
		})
		s.backends = s.ownPool
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	noop := func(context.Context, *mcp.SubscribeRequest) error { return nil }
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "toolbox", Version: version}, &mcp.ServerOptions{
		Instructions:       instructions,
		Logger:             opts.Logger,
		SubscribeHandler:   noop,
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.mcp.AddReceivingMiddleware(s.cancelOnShutdown)
	s.register()
	s.addHelp()
	s.sup.SetLock(lockPath, opts.Lock)
	return s, nil
}

// register adds every tool of the lock (mcpnames.Definitions: names,
// descriptions, input and output schemas), and the inbox resource when the
// lock has processes.
func (s *Server) register() {
	defs := mcpnames.Definitions(s.lock, filepath.Dir(s.lockPath))
	sends := map[string]bool{}
	for _, d := range defs {
		if d.Kind == mcpnames.KindSend {
			sends[d.Entry.Name] = true
		}
	}
	for _, d := range defs {
		t := &mcp.Tool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema}
		if d.OutputSchema != nil {
			t.OutputSchema = d.OutputSchema
		}
		var h mcp.ToolHandler
		switch d.Kind {
		case mcpnames.KindEntry:
			h = s.entryHandler(d.Entry, sends[d.Entry.Name])
		case mcpnames.KindSend:
			h = s.sendHandler(d.Entry)
		case mcpnames.KindProcesses:
			h = withConn(s, d.Name, s.processes)
		case mcpnames.KindInbox:
			h = withConn(s, d.Name, s.inbox)
			s.mcp.AddResource(&mcp.Resource{
				URI: InboxURI, Name: "inbox", MIMEType: "application/json",
				Description: "This session's newest mail (service events, process completions); subscribe to be told when mail arrives.",
			}, s.readInbox)
		case mcpnames.KindCommandRun:
			h = withConn(s, d.Name, s.commandRun)
		case mcpnames.KindCommandStatus:
			h = withConn(s, d.Name, s.commandStatus)
		case mcpnames.KindCommandKill:
			h = withConn(s, d.Name, s.commandKill)
		}
		s.mcp.AddTool(t, h)
	}
}

// readInbox serves InboxURI: the reader's newest mails.
func (s *Server) readInbox(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	c, err := s.conn(req.Session)
	if err != nil {
		return nil, err
	}
	// Find the newest mail's number, then read the MaxInbox mails up to it;
	// the mailbox is bounded, so the walk is too.
	pg, err := s.sup.Inbox(c.id, 0, supervisor.MaxInbox)
	for err == nil && pg.More {
		pg, err = s.sup.Inbox(c.id, pg.Next, supervisor.MaxInbox)
	}
	if err == nil && len(pg.Mails) < supervisor.MaxInbox && pg.Next > 0 {
		from := max(pg.Next-supervisor.MaxInbox, pg.Earliest-1, 0)
		pg, err = s.sup.Inbox(c.id, from, supervisor.MaxInbox)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the inbox: %w", err)
	}
	data, err := json.Marshal(pg)
	if err != nil {
		return nil, fmt.Errorf("reading the inbox: %w", err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: InboxURI, MIMEType: "application/json", Text: string(data)}}}, nil
}

// MCP returns the SDK server, for transports this package does not wrap.
// A connection made with it directly (Server.Connect) still gets its own
// session, closed when the connection ends.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Names returns the MCP tool names served, sorted (mcpnames.ToolNames of the lock).
func (s *Server) Names() []string { return append([]string(nil), s.names...) }

// Close cancels every call in flight (each stops its tool with the
// declared cancel, then SIGKILL after the tool's stop grace), refuses new
// connections' sessions and stops the processes of every open one
// (supervisor.CloseSession) and their warm plugins, waiting for them: it
// returns within the longest stop grace of what runs. It does not close
// the Supervisor.
func (s *Server) Close() {
	s.endLife()
	s.mu.Lock()
	s.closed = true
	cs := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		s.closeConn(c)
	}
	s.pool.Close()
	if s.ownPool != nil {
		s.ownPool.Close()
	}
}
