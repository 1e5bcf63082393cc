package mcpbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// captureTransport wraps a transport so that the raw result of every
// tools/list request is kept and the server's own messages are handled
// here (captureConn).
type captureTransport struct {
	inner mcp.Transport
	conn  *captureConn
}

func (t *captureTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn.Connection = c
	return t.conn, nil
}

// methodListChanged is the notification a server sends when its tools
// changed.
const methodListChanged = "notifications/tools/list_changed"

// captureConn is the session's connection, between the SDK's client and
// the server:
//
//   - it records the raw result of the tools/list requests that go
//     through it: the bytes the server sent, before the SDK decodes (and
//     filters) them. Session.List holds a lock around each request, so
//     one result at a time is pending.
//   - it keeps every message the server sends on its own from the SDK.
//     The client offers the server nothing, so it answers each request
//     itself, in order and before reading on: ping with an empty result,
//     anything else (roots, sampling, elicitation...) with "method not
//     found". A server that floods requests and reads no answer blocks
//     its own writes instead of growing the client (the SDK answers each
//     request on a goroutine of its own, queued without bound). Of the
//     notifications, only tools/list_changed is used (listChanged, which
//     must not block); the others are dropped.
//   - a write still blocked when its context ends (a server that stopped
//     reading its stdin) closes the connection: the call returns at its
//     deadline, and the session, whose stream may hold half a message,
//     ends.
type captureConn struct {
	mcp.Connection
	listChanged func()
	mu          sync.Mutex
	pending     map[jsonrpc.ID]bool
	last        json.RawMessage
}

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err // nothing written: the connection stays usable
	}
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/list" && r.ID.IsValid() {
		c.mu.Lock()
		if c.pending == nil {
			c.pending = map[jsonrpc.ID]bool{}
		}
		c.pending[r.ID] = true
		c.mu.Unlock()
	}
	var wrote atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		if !wrote.Load() {
			c.abort()
		}
	})
	err := c.Connection.Write(ctx, msg)
	wrote.Store(true)
	stop()
	return err
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			c.mu.Lock()
			if c.pending[m.ID] {
				delete(c.pending, m.ID)
				c.last = append(json.RawMessage(nil), m.Result...)
			}
			c.mu.Unlock()
			return m, nil
		case *jsonrpc.Request:
			if !m.IsCall() {
				if m.Method == methodListChanged && c.listChanged != nil {
					c.listChanged()
				}
				continue
			}
			answer := &jsonrpc.Response{ID: m.ID, Result: json.RawMessage(`{}`)}
			if m.Method != "ping" {
				answer = &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not offered by this client", m.Method)}}
			}
			// An answer that cannot be written is the server's loss (over
			// HTTP a refused POST; over stdio a broken pipe, which the
			// next read reports).
			_ = c.Connection.Write(ctx, answer)
		default:
			return msg, nil
		}
	}
}

// abort closes the connection under the SDK: every read and write
// blocked on it returns.
func (c *captureConn) abort() { _ = c.Connection.Close() }

// take returns the last tools/list result and forgets it.
func (c *captureConn) take() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.last
	c.last = nil
	return r
}
