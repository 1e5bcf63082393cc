package mcpbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/tail"
)

// Remote says how to reach a server over streamable HTTP.
type Remote struct {
	// Server is the server's name in the toolbox file, for messages.
	Server string
	// URL is the server's MCP endpoint.
	URL string
	// Token, when not empty, is sent with every request as
	// "Authorization: Bearer TOKEN".
	Token string
	// StartTimeout bounds the initialize handshake (0 =
	// DefaultStartTimeout).
	StartTimeout time.Duration
	// OnListChanged is as in Launch.
	OnListChanged func()
}

// Dial initializes a session with a server over streamable HTTP. Nothing
// runs locally, so nothing is sandboxed: what the lock pins of such a
// server is its URL, its serverInfo and its tools. Redirects are refused,
// so that the token never reaches another URL. Errors: the server cannot
// be reached, refuses the token, or does not initialize in time.
func Dial(ctx context.Context, r Remote) (*Session, error) {
	timeout := r.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	client := &http.Client{
		Transport: &bearer{base: http.DefaultTransport, token: r.Token},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the MCP server redirected the request; give its final URL")
		},
	}
	t := &mcp.StreamableClientTransport{Endpoint: r.URL, HTTPClient: client, MaxRetries: -1}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := connect(cctx, r.Server, t, r.OnListChanged, nil, &tail.Buffer{})
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer to initialize within %s", timeout)
		}
		return nil, fmt.Errorf("initializing mcp server %q at %s: %w", r.Server, r.URL, err)
	}
	return s, nil
}

// bearer adds the Authorization header to every request, and bounds
// every response body but an event stream to MaxBodyBytes: the SDK reads
// a JSON answer (and an error's body) whole with io.ReadAll, so a server
// sending one without end would grow toolbox without bound. An event
// stream is bounded by the SDK, per event.
type bearer struct {
	base  http.RoundTripper
	token string
}

// MaxBodyBytes bounds a response body of a server reached by URL that is
// not an event stream: one JSON-RPC message, bounded as a stdio server's
// line is (mcp.DefaultMaxLineLength).
const MaxBodyBytes = mcp.DefaultMaxLineLength

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.token != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := b.base.RoundTrip(req)
	if err == nil && resp.Body != nil {
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
			resp.Body = &boundedBody{ReadCloser: resp.Body, left: MaxBodyBytes}
		}
	}
	return resp, err
}

// boundedBody fails a read past its bound instead of returning more.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the bound: a body that ends there is whole, one more byte
		// is over.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("the server's answer is larger than %d bytes", MaxBodyBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
