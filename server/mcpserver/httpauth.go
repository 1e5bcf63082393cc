package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/toolbox-dev/toolbox/internal/atomicfile"
	"github.com/toolbox-dev/toolbox/internal/shq"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// TokenFileName is the bearer token of `toolbox serve --mcp-http` in the
// state dir, when the operator names no token file.
const TokenFileName = "mcp.token"

// MinTokenBytes is the shortest token accepted from a file: a token is a
// password that a local process may try to guess at loopback speed.
const MinTokenBytes = 32

// HTTPGuard is what the streamable HTTP transport checks before a request
// reaches MCP (DESIGN.md §7). The SDK's handler already refuses a request
// that reaches a loopback address with a Host header that is not loopback
// (DNS rebinding); the guard adds, in this order:
//
//  1. Origin (the MCP transport spec: servers MUST validate it, and answer
//     a present, invalid one with 403): a request without an Origin header
//     (every non-browser client) passes; one with an Origin passes only
//     when it is in Origins, compared as scheme://host[:port] with the
//     scheme and host lower-cased and a default port dropped.
//  2. The peer (unix sockets): with PeerUID set, a connection whose peer
//     (SO_PEERCRED, recorded by ConnContext) is another uid gets 403, as
//     on the daemon's socket.
//  3. The bearer token: with Token set, a request without
//     `Authorization: Bearer <Token>` gets 401 and a WWW-Authenticate
//     header (error="invalid_token" when a wrong token was given). Tokens
//     are compared in constant time.
//
// The zero value checks only that no Origin is present.
type HTTPGuard struct {
	Token   string
	Origins []string
	// PeerUID, when not nil, is the only uid served on unix sockets; a
	// request that did not come through ConnContext's unix connection is
	// refused then.
	PeerUID *int
}

// Wrap returns h behind the guard's checks.
func (g HTTPGuard) Wrap(h http.Handler) http.Handler {
	origins := map[string]bool{}
	for _, o := range g.Origins {
		if n, err := NormalizeOrigin(o); err == nil {
			origins[n] = true
		}
	}
	want := sha256.Sum256([]byte(g.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Values("Origin"); len(o) > 0 {
			n, err := NormalizeOrigin(o[0])
			if len(o) > 1 || err != nil || !origins[n] {
				http.Error(w, fmt.Sprintf("forbidden: origin %q is not this server's (a browser page may not call it; an operator may allow it with --mcp-allow-origin)", o[0]), http.StatusForbidden)
				return
			}
		}
		if g.PeerUID != nil {
			uid, ok := r.Context().Value(peerKey{}).(int)
			if !ok || uid != *g.PeerUID {
				http.Error(w, fmt.Sprintf("forbidden: only uid %d may use this server", *g.PeerUID), http.StatusForbidden)
				return
			}
		}
		if g.Token != "" {
			given, ok := bearer(r)
			got := sha256.Sum256([]byte(given))
			if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				challenge := `Bearer realm="toolbox"`
				if ok {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				http.Error(w, "unauthorized: send the token of `toolbox serve` as Authorization: Bearer <token> (it is in the file serve printed at start)", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// bearer is the token of an `Authorization: Bearer <token>` header; ok is
// false when the header is missing or of another scheme.
func bearer(r *http.Request) (string, bool) {
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// NormalizeOrigin returns an origin as scheme://host[:port], scheme and
// host lower-cased, the default port of http and https dropped. "null"
// (opaque origins) stays "null". It fails on anything else that is not an
// http(s) origin without path, query or user.
func NormalizeOrigin(s string) (string, error) {
	if s == "null" {
		return s, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("origin %q: %w", s, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("origin %q: want scheme://host[:port] with scheme http or https", s)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		return scheme + "://" + host, nil
	}
	return scheme + "://" + host + ":" + port, nil
}

// OwnOrigins are the origins of an http listener: http://HOST:PORT for the
// host as the operator wrote it and for the address bound.
func OwnOrigins(given string, bound net.Addr) []string {
	var out []string
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return nil
	}
	host, _, _ := net.SplitHostPort(given)
	ip, _, _ := net.SplitHostPort(bound.String())
	for _, h := range []string{host, ip} {
		if h != "" {
			out = append(out, "http://"+net.JoinHostPort(h, port))
		}
	}
	return out
}

type peerKey struct{}

// ConnContext is http.Server.ConnContext for a server that listens on a
// unix socket: it records the peer's uid (SO_PEERCRED) for HTTPGuard's
// PeerUID check. Other connections get nothing recorded.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if uc, ok := c.(*net.UnixConn); ok {
		if uid, err := wire.PeerUID(uc); err == nil {
			return context.WithValue(ctx, peerKey{}, uid)
		}
	}
	return ctx
}

// ReadTokenFile reads the bearer token an operator keeps in path (the
// first line, trimmed). The file must not be readable or writable by group
// or others, nor be a symlink, and the token must have at least
// MinTokenBytes bytes.
func ReadTokenFile(path string) (string, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return "", fmt.Errorf("reading the MCP token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the MCP token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("MCP token file %q is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("MCP token file %q is mode %#o: others could read the token; run `chmod 600 %s`", path, perm, shq.Quote(path))
	}
	buf := make([]byte, 4096)
	n, _ := f.Read(buf)
	token, _, _ := strings.Cut(string(buf[:n]), "\n")
	token = strings.TrimSpace(token)
	if len(token) < MinTokenBytes {
		return "", fmt.Errorf("MCP token file %q holds a token of %d bytes, want at least %d (e.g. `head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`)", path, len(token), MinTokenBytes)
	}
	return token, nil
}

// EnsureTokenFile returns the token in path, creating the file when it is
// missing: 32 random bytes (crypto/rand), hex-encoded, in a file of mode
// 0600 that appears whole or not at all (written under a temporary name,
// then linked into place, so a concurrent creation is never overwritten).
// An existing file is reused only when it is a regular file (not a
// symlink) of mode 0600 owned by this user holding a token of at least
// MinTokenBytes bytes; anything else is refused, with the fix. created
// says the file was made now.
func EnsureTokenFile(path string) (token string, created bool, err error) {
	fi, err := os.Lstat(path)
	switch {
	case err == nil:
		if err := checkOwnTokenFile(path, fi); err != nil {
			return "", false, err
		}
		token, err := ReadTokenFile(path)
		return token, false, err
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("checking the MCP token file: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", false, fmt.Errorf("making the MCP token: %w", err)
	}
	token = hex.EncodeToString(raw[:])
	if err := atomicfile.Create(path, []byte(token+"\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) { // made meanwhile: use that one
			return EnsureTokenFile(path)
		}
		return "", false, fmt.Errorf("writing the MCP token file: %w", err)
	}
	return token, true, nil
}

// checkOwnTokenFile refuses a token file toolbox did not make as it makes
// them.
func checkOwnTokenFile(path string, fi fs.FileInfo) error {
	fix := fmt.Sprintf("remove it (`rm %s`) and toolbox serve makes a new one, or pass your own with --mcp-token-file", shq.Quote(path))
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("MCP token file %q is not a regular file (%v); %s", path, fi.Mode().Type(), fix)
	}
	if fi.Mode().Perm() != 0o600 {
		return fmt.Errorf("MCP token file %q is mode %#o, not 0600; %s", path, fi.Mode().Perm(), fix)
	}
	if uid, ok := fileOwner(fi); !ok || uid != os.Getuid() {
		return fmt.Errorf("MCP token file %q belongs to uid %d, not to this user (uid %d); %s", path, uid, os.Getuid(), fix)
	}
	return nil
}
