package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/pluginrun"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
)

// conn is what one MCP connection (one *mcp.ServerSession) owns: a
// supervisor session and its warm plugins, created on the connection's
// first use, and the goroutines that forward its mail and close both when
// the connection ends.
type conn struct {
	id string // the supervisor session, also TOOLBOX_SESSION
	ss *mcp.ServerSession
	// plugins runs the connection's plugin calls; owner, when not nil,
	// is its warm plugins, closed with the connection.
	plugins launcher.PluginRunner
	owner   *pluginrun.Owner
	unsub   func()
	once    sync.Once
	stop    chan struct{} // closed when the connection ended: stop forwarding
	done    chan struct{} // closed once the session's processes are stopped
}

// LoggerName is the logger of the logging notifications that carry mail.
const LoggerName = "toolbox"

// conn returns the connection's state, creating it (and its supervisor
// session) on first use. Errors: the server is closing.
func (s *Server) conn(ss *mcp.ServerSession) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the MCP server is shutting down")
	}
	if c := s.conns[ss]; c != nil {
		return c, nil
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	c := &conn{id: "mcp-" + hex.EncodeToString(b[:]), ss: ss, stop: make(chan struct{}), done: make(chan struct{})}
	plugins, owner, err := s.pluginRunner(c.id)
	if err != nil {
		return nil, fmt.Errorf("opening the session's plugins: %w", err)
	}
	c.plugins, c.owner = plugins, owner
	ch, unsub, err := s.sup.Subscribe(c.id)
	if err != nil {
		if owner != nil {
			owner.Close()
		}
		return nil, fmt.Errorf("opening the session's mailbox: %w", err)
	}
	c.unsub = unsub
	s.conns[ss] = c
	go s.forward(c, ch)
	go func() {
		_ = ss.Wait()
		s.closeConn(c)
	}()
	return c, nil
}

// closeConn stops the connection's processes and forgets its session
// (supervisor.CloseSession); it runs once, later calls wait for the first.
func (s *Server) closeConn(c *conn) {
	c.once.Do(func() {
		close(c.stop)
		c.unsub()
		// The processes end within their stop grace (then SIGKILL), so
		// this wait is bounded without a deadline of its own.
		if err := s.sup.CloseSession(context.Background(), c.id); err != nil {
			s.log.Warn("closing an MCP session", "session", c.id, "error", err)
		}
		if c.owner != nil {
			c.owner.Close() // its warm plugins: bounded by their close grace
		}
		s.stopServers(c.id)
		s.mu.Lock()
		if s.conns[c.ss] == c {
			delete(s.conns, c.ss)
		}
		s.mu.Unlock()
		close(c.done)
	})
	<-c.done
}

// reap stops what a call started after its connection ended: the
// connection's close may have run between the call's start and the
// process's registration. Call it after every start that succeeded.
func (s *Server) reap(c *conn) {
	select {
	case <-c.stop:
		if err := s.sup.CloseSession(context.Background(), c.id); err != nil {
			s.log.Warn("closing an MCP session", "session", c.id, "error", err)
		}
	default:
	}
}

// reapServers stops the warm MCP servers a call started after its
// connection ended (its close may have run during the call). Call it
// after every call that may have started one.
func (s *Server) reapServers(c *conn) {
	select {
	case <-c.stop:
		s.stopServers(c.id)
	default:
	}
}

// stopServers stops the warm MCP servers of session id, when the MCP
// runner keeps any (Options.MCP).
func (s *Server) stopServers(id string) {
	if o, ok := s.backends.(interface{ CloseOwner(string) }); ok {
		o.CloseOwner(id)
	}
}

// closeSession closes ss's state if it has any.
func (s *Server) closeSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	c := s.conns[ss]
	s.mu.Unlock()
	if c != nil {
		s.closeConn(c)
	}
}

// forward turns each new mail of the session into notifications: a
// logging notification (level info, or warning for a process that did not
// end well; logger LoggerName; data the mail) to this connection, and a
// resources/updated notification for InboxURI to its subscribers. The
// subscription channel is only a nudge: the mails are read from the inbox
// from the last one forwarded, so a nudge dropped under load loses nothing.
func (s *Server) forward(c *conn, nudges <-chan supervisor.Mail) {
	var cursor int64
	for {
		select {
		case _, ok := <-nudges:
			if !ok {
				return
			}
		case <-c.stop:
			return
		}
		sent := false
		for {
			pg, err := s.sup.Inbox(c.id, cursor, supervisor.MaxInbox)
			if err != nil {
				s.log.Warn("reading the inbox to notify", "session", c.id, "error", err)
				break
			}
			for _, m := range pg.Mails {
				s.notifyMail(c, m)
				sent = true
			}
			cursor = pg.Next
			if !pg.More {
				break
			}
		}
		if sent {
			ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
			if err := s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: InboxURI}); err != nil {
				s.log.Debug("resource updated notification", "error", err)
			}
			cancel()
		}
	}
}

// notifyTimeout bounds one notification to a client that stopped reading.
const notifyTimeout = 5 * time.Second

func (s *Server) notifyMail(c *conn, m supervisor.Mail) {
	level := mcp.LoggingLevel("info")
	switch m.State {
	case supervisor.StateFailed, supervisor.StateTimedOut, supervisor.StateLost:
		level = "warning"
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	// The SDK sends nothing until the client set a level (logging/setLevel).
	if err := c.ss.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: LoggerName, Data: m}); err != nil {
		s.log.Debug("logging notification", "session", c.id, "error", err)
	}
}
