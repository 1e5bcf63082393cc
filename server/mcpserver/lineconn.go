package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one JSON-RPC message read over stdio: the SDK's
// own line limit (mcp.DefaultMaxLineLength, 16 MiB). A longer line is
// skipped to its end and answered with an error.
const MaxMessageBytes = mcp.DefaultMaxLineLength

// lineTransport is the stdio transport of ServeStdio and ServeIO: one
// JSON-RPC message per line, like the SDK's IOTransport, except that a
// line that is not one valid message no longer ends the session (with the
// SDK's, one malformed line ended it and stopped its processes, and a line
// cut short swallowed the request after it). Such a line is answered, as
// JSON-RPC 2.0 says, with a parse error (-32700: not JSON) or an invalid
// request (-32600: a batch, an id that is not a string or a number, not a
// message, longer than MaxMessageBytes), with id null unless the line
// carried a usable id; then the next line is read. Batches are refused:
// the protocol versions the server speaks have none.
type lineTransport struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (t *lineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := &lineConn{
		w:        t.w,
		closers:  []io.Closer{t.r, t.w},
		incoming: make(chan jsonrpc.Message),
		done:     make(chan struct{}),
		writing:  make(chan struct{}, 1),
		abandon:  make(chan struct{}),
	}
	// ctx is the Serve call's: its end is the server stopping.
	context.AfterFunc(ctx, c.end)
	go c.readLoop(bufio.NewReaderSize(t.r, 64<<10))
	return c, nil
}

// lineConn is one connection of lineTransport. Read and Write may be
// called concurrently; Close unblocks Read.
type lineConn struct {
	w       io.Writer
	closers []io.Closer
	// writing holds one token while a line is being written: taken
	// before a write and given back when the write returns, so that
	// lines never interleave, and waited for together with done so that
	// a write blocked on a client that stopped reading never holds up
	// Close nor the writes after it.
	writing chan struct{}

	incoming chan jsonrpc.Message
	readErr  error // why the read loop ended; set before incoming is closed

	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// abandon is closed writeGrace after the input ended or the server
	// began to stop (ending, once): from then on a write blocked on a
	// client that does not read is given up.
	abandon chan struct{}
	ending  sync.Once
}

// writeGrace is how long, once the client closed its input or the server
// began to stop, the answers still being written wait for the client to
// read them before they are given up (DESIGN.md §7: a stopping server
// exits within the longest stop grace + 1 s).
const writeGrace = time.Second

// end starts the write grace (idempotent).
func (c *lineConn) end() {
	c.ending.Do(func() { time.AfterFunc(writeGrace, func() { close(c.abandon) }) })
}

var _ mcp.Connection = (*lineConn)(nil)

// readLoop reads lines until the input ends, handing each valid message
// to Read and answering each invalid line itself.
func (c *lineConn) readLoop(r *bufio.Reader) {
	defer close(c.incoming)
	defer c.end()
	for {
		line, tooLong, err := readLine(r, MaxMessageBytes)
		if tooLong {
			c.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: a message longer than %d bytes; it was skipped", MaxMessageBytes))
		} else if msg := c.parse(line); msg != nil {
			select {
			case c.incoming <- msg:
			case <-c.done:
				return
			}
		}
		if err != nil {
			c.readErr = err
			return
		}
	}
}

// parse decodes one line, answering it when it is not a message. It
// returns nil for a blank line and for a line it answered.
func (c *lineConn) parse(line []byte) jsonrpc.Message {
	line = bytes.TrimSpace(line)
	switch {
	case len(line) == 0:
		return nil
	case !json.Valid(line):
		c.reject(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON; send one JSON-RPC message per line")
		return nil
	case line[0] == '[':
		c.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported; send one JSON-RPC message per line")
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Result == nil && resp.Error == nil {
		err = errors.New("a message needs a method (a request), or a result or an error (a response)")
	}
	if err != nil {
		c.reject(lineID(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	return msg
}

// lineID is the id of a message that did not decode, when it is one an
// answer can carry (a string or a number), else nil (id null).
func lineID(line []byte) any {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	if id, err := jsonrpc.MakeID(m.ID); err == nil && id.IsValid() {
		return id.Raw()
	}
	return nil
}

// reject writes the error response of a line that is no message.
func (c *lineConn) reject(id any, code int64, message string) {
	resp := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id}
	resp.Error.Code, resp.Error.Message = code, message
	data, err := json.Marshal(resp)
	if err != nil {
		return
	}
	_ = c.writeLine(data) // a client that went away reads no answer
}

// readLine reads one line without its newline, holding at most max bytes:
// a longer line is read to its end and dropped (tooLong). err is the
// reader's, io.EOF at the end of the input (line then holds an
// unterminated last line).
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		part, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(part) > max+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, part...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}

// Read returns the next message. At the end of the input it returns
// io.EOF, and mcp.ErrConnectionClosed once Close was called.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg, ok := <-c.incoming:
		if !ok {
			if c.readErr == nil || errors.Is(c.readErr, io.EOF) {
				return nil, io.EOF
			}
			return nil, c.readErr
		}
		return msg, nil
	case <-c.done:
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write writes msg as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	return c.writeLine(data)
}

// writeLine writes data and a newline. A client that stops reading (its
// stdout pipe full) and closes stdin, or a server told to stop, must not
// leave the server blocked forever in a write nobody reads (it was, SIGTERM
// included: the SDK's close waits for the answers being written): once the
// connection is closed, or writeGrace after the input ended or the server
// began to stop, a write still blocked returns mcp.ErrConnectionClosed, and
// so does every later one. The blocked write is left to end with the
// stream.
func (c *lineConn) writeLine(data []byte) error {
	select {
	case c.writing <- struct{}{}:
	case <-c.done:
		return mcp.ErrConnectionClosed
	case <-c.abandon:
		return mcp.ErrConnectionClosed
	}
	select {
	case <-c.done:
		<-c.writing
		return mcp.ErrConnectionClosed
	case <-c.abandon:
		<-c.writing
		return mcp.ErrConnectionClosed
	default:
	}
	written := make(chan error, 1)
	go func() {
		_, err := c.w.Write(append(data, '\n'))
		<-c.writing
		written <- err
	}()
	select {
	case err := <-written:
		return err
	case <-c.done:
		return mcp.ErrConnectionClosed
	case <-c.abandon:
		return mcp.ErrConnectionClosed
	}
}

// Close closes both streams; it may be called more than once.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		var errs []error
		for _, cl := range c.closers {
			errs = append(errs, cl.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// SessionID is "": a stdio connection has no session id.
func (c *lineConn) SessionID() string { return "" }
