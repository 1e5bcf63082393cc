package mcpserver

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestNormalizeOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8765":   "http://127.0.0.1:8765",
		"HTTP://LocalHost:8765/":  "http://localhost:8765",
		"https://example.com:443": "https://example.com",
		"http://example.com:80":   "http://example.com",
		"http://[::1]:9":          "http://[::1]:9",
		"null":                    "null",
	} {
		if got, err := NormalizeOrigin(in); err != nil || got != want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "example.com", "ftp://x", "http://x/path", "http://u@x", "http://x?q=1"} {
		if got, err := NormalizeOrigin(bad); err == nil {
			t.Errorf("NormalizeOrigin(%q) = %q, want an error", bad, got)
		}
	}
}

// TestHTTPGuardPeerUID: on a unix socket, the guard serves a peer of the
// uid it names and refuses any other with 403, as the daemon's socket
// does (SO_PEERCRED through ConnContext); an Origin there is refused too.
func TestHTTPGuardPeerUID(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, c := range []struct {
		uid    int
		origin string
		want   int
	}{
		{os.Getuid(), "", http.StatusNoContent},
		{os.Getuid() + 1, "", http.StatusForbidden},
		{os.Getuid(), "http://localhost", http.StatusForbidden},
	} {
		_ = os.Remove(sock)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		uid := c.uid
		hs := &http.Server{Handler: HTTPGuard{PeerUID: &uid}.Wrap(ok), ConnContext: ConnContext}
		go hs.Serve(ln)
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		req, _ := http.NewRequest(http.MethodGet, "http://toolbox/mcp", nil)
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("guard for uid %d, origin %q: %s, want %d", c.uid, c.origin, res.Status, c.want)
		}
		hs.Close()
	}
}
