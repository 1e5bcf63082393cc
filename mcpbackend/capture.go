package mcpbackend

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// captureTransport wraps a transport so that the raw result of every
// tools/list request is kept (captureConn).
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

// captureConn records the raw result of the tools/list requests that go
// through it: the bytes the server sent, before the SDK decodes (and
// filters) them. Session.list holds a lock around each request, so one
// result at a time is pending.
type captureConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool
	last    json.RawMessage
}

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/list" && r.ID.IsValid() {
		c.mu.Lock()
		if c.pending == nil {
			c.pending = map[jsonrpc.ID]bool{}
		}
		c.pending[r.ID] = true
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		if c.pending[r.ID] {
			delete(c.pending, r.ID)
			c.last = append(json.RawMessage(nil), r.Result...)
		}
		c.mu.Unlock()
	}
	return msg, err
}

// take returns the last tools/list result and forgets it.
func (c *captureConn) take() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.last
	c.last = nil
	return r
}
