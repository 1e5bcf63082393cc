package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one MCP connection over the process's stdin and stdout
// (nothing else is ever written to stdout) until stdin closes or ctx ends,
// then stops the connection's processes. See Serve. A line that is not a
// JSON-RPC message is answered with an error and the session goes on
// (lineTransport).
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.ServeIO(ctx, os.Stdin, os.Stdout)
}

// ServeIO is ServeStdio over the given streams (tests, or a front-end
// that owns its streams). The streams are closed when the connection
// ends if they are io.Closers.
func (s *Server) ServeIO(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.Serve(ctx, &lineTransport{r: readCloser(in), w: writeCloser(out)})
}

// Serve serves one MCP connection over t until the client ends it or ctx
// ends, then stops the processes the connection started and forgets its
// session (supervisor.CloseSession) before returning. When ctx ends, the
// connection's calls in flight are cancelled (their tools stopped with
// their declared cancel, then SIGKILL after their stop grace) while its
// processes are stopped the same way, so Serve returns within the longest
// stop grace. A connection that ends because the client went away is not
// an error.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connecting the MCP client: %w", err)
	}
	defer s.serveStarted(ss, ctx)()
	stop := context.AfterFunc(ctx, func() {
		go s.closeSession(ss) // the processes stop while the calls do
		_ = ss.Close()        // waits for the calls, cancelled by ctx
	})
	defer stop()
	werr := ss.Wait()
	s.closeSession(ss)
	if ctx.Err() != nil || errors.Is(werr, mcp.ErrConnectionClosed) || errors.Is(werr, io.EOF) || errors.Is(werr, io.ErrClosedPipe) {
		return nil
	}
	if werr != nil {
		return fmt.Errorf("serving MCP: %w", werr)
	}
	return nil
}

// DefaultSessionTimeout closes an HTTP session (and stops its processes)
// after this long without a request from its client, when Handler is
// given no options.
const DefaultSessionTimeout = 30 * time.Minute

// Handler returns the streamable HTTP handler of the server (for the
// daemon, `toolbox serve`, to mount). Each HTTP session is a connection
// with its own supervisor session, closed (processes stopped) when the
// client deletes it or it idles past opts.SessionTimeout. nil opts means
// stateful sessions with DefaultSessionTimeout and the SDK's localhost
// protection. Stateless mode gives each request a session of its own, so
// a service started by one request would be stopped at its end: do not
// use it with services.
func (s *Server) Handler(opts *mcp.StreamableHTTPOptions) http.Handler {
	if opts == nil {
		opts = &mcp.StreamableHTTPOptions{SessionTimeout: DefaultSessionTimeout, Logger: s.opts.Logger}
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, opts)
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func writeCloser(w io.Writer) io.WriteCloser {
	if wc, ok := w.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{w}
}
