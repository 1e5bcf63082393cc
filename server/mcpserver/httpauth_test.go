package mcpserver

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

// TestHTTPGuardMalformedRequests: requests a client should not send are
// refused with a status, not served: an empty bearer token, the token
// under another scheme, two Origin headers (one of them the server's
// own), and, past the guard, a body that is not JSON or is a batch. The
// same server then still serves a well-formed request.
func TestHTTPGuardMalformedRequests(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "echo", `echo "hello $2"`, v1("echo", arg("who", "single")))
	srv, err := New(Options{LockPath: f.LockPath, Lock: f.Lock, Supervisor: newSupervisor(t, f), CallerEnv: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	const token = "0123456789abcdef0123456789abcdef"
	own := "http://127.0.0.1:1"
	hs := httptest.NewServer(HTTPGuard{Token: token, Origins: []string{own}}.Wrap(srv.Handler(nil)))
	defer hs.Close()
	post := func(body string, header http.Header) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, vs := range header {
			req.Header[k] = vs
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	auth := http.Header{"Authorization": {"Bearer " + token}}
	for _, c := range []struct {
		name   string
		body   string
		header http.Header
		want   int
	}{
		{"empty bearer", initialize, http.Header{"Authorization": {"Bearer "}}, http.StatusUnauthorized},
		{"bearer alone", initialize, http.Header{"Authorization": {"Bearer"}}, http.StatusUnauthorized},
		{"token as basic", initialize, http.Header{"Authorization": {"Basic " + token}}, http.StatusUnauthorized},
		{"token with a suffix", initialize, http.Header{"Authorization": {"Bearer " + token + "x"}}, http.StatusUnauthorized},
		{"two origins", initialize, http.Header{"Authorization": {"Bearer " + token}, "Origin": {own, "http://evil.example"}}, http.StatusForbidden},
		{"not JSON", "{not json", auth, http.StatusBadRequest},
		{"cut short", initialize[:40], auth, http.StatusBadRequest},
		{"positive twin", initialize, auth, http.StatusOK},
	} {
		if got := post(c.body, c.header); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
}
