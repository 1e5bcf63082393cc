package mcpbackend

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// roundTripFunc is an http.RoundTripper answering every request itself.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A server reached by URL answers with a body of n bytes of the media
// type mt: what bearer lets the SDK read of it. A JSON answer is bounded
// to MaxBodyBytes (one more byte fails, naming the bound), one of exactly
// MaxBodyBytes is read whole (it failed, at its end, as if longer); an
// event stream is bounded per event by the SDK, not here.
func TestBearerBoundsAnswerBodies(t *testing.T) {
	for _, c := range []struct {
		mt      string
		n       int
		refused bool
	}{
		{"application/json", MaxBodyBytes, false},
		{"application/json; charset=utf-8", MaxBodyBytes + 1, true},
		{"", MaxBodyBytes + 1, true},
		{"text/event-stream", MaxBodyBytes + 1, false},
	} {
		b := &bearer{token: "t", base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if got := r.Header.Get("Authorization"); got != "Bearer t" {
				t.Errorf("Authorization %q", got)
			}
			h := http.Header{}
			h.Set("Content-Type", c.mt)
			return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(strings.Repeat("x", c.n)))}, nil
		})}
		req, _ := http.NewRequest(http.MethodPost, "http://server.invalid/mcp", nil)
		resp, err := b.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), "larger than")):
			t.Errorf("%q of %d bytes: read %d, err %v; want refused past %d", c.mt, c.n, len(got), err, MaxBodyBytes)
		case !c.refused && (err != nil || len(got) != c.n):
			t.Errorf("%q of %d bytes: read %d, err %v; want it whole", c.mt, c.n, len(got), err)
		}
	}
}
