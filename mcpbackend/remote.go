package mcpbackend

import (
	"context"
	"errors"
	"fmt"
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

// bearer adds the Authorization header to every request.
type bearer struct {
	base  http.RoundTripper
	token string
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.token != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(req)
}
