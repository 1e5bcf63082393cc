package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

func TestParseHandshake(t *testing.T) {
	tests := []struct {
		line     string
		ok       bool
		mismatch string // a substring of the reason, "" when accepted
	}{
		{"1|1|unix|/tmp/plugin123|grpc|", true, ""},
		{"1|1|tcp|127.0.0.1:1234|grpc", true, ""},
		{"1|2|unix|/tmp/p|grpc|", true, "protocol 2"},
		{"2|1|unix|/tmp/p|grpc", true, "core protocol 2"},
		{"1|1|unix|/tmp/p", true, `"netrpc"`},
		{"1|1|unix|/tmp/p|netrpc", true, `"netrpc"`},
		{"hello world", false, ""},
		{"1|1|pipe|x|grpc", false, ""},
		{"a|1|unix|x|grpc", false, ""},
		{"1|1|unix||grpc", false, ""},
		{"", false, ""},
	}
	for _, tt := range tests {
		hs, ok := parseHandshake(tt.line)
		if ok != tt.ok {
			t.Errorf("parseHandshake(%q) ok = %v", tt.line, ok)
			continue
		}
		if !ok {
			continue
		}
		why := hs.mismatch()
		if (why == "") != (tt.mismatch == "") || !strings.Contains(why, tt.mismatch) {
			t.Errorf("parseHandshake(%q).mismatch() = %q, want one mentioning %q", tt.line, why, tt.mismatch)
		}
	}
}

func TestTailKeepsTheEnd(t *testing.T) {
	tl := newTail(8)
	tl.Write([]byte("  abc"))
	tl.Write([]byte("defghij\n"))
	if got := tl.String(); got != "defghij" {
		t.Errorf("tail = %q, want %q", got, "defghij")
	}
}

// SocketBase is TMPDIR when the socket fits under it and others can
// search it (a plugin run as another user reaches its socket), else /tmp.
func TestSocketBaseIsShort(t *testing.T) {
	open := testenv.OpenDir(t, "b")
	private := filepath.Join(open, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", "/"+strings.Repeat("x", 100))
	if got := socketBase(""); got != "/tmp" {
		t.Errorf("socketBase with a long TMPDIR = %q, want /tmp", got)
	}
	t.Setenv("TMPDIR", open)
	if got := socketBase(""); got != open {
		t.Errorf("socketBase = %q, want %q", got, open)
	}
	t.Setenv("TMPDIR", private)
	if got := socketBase(""); got != "/tmp" {
		t.Errorf("socketBase with a 0700 TMPDIR = %q, want /tmp", got)
	}
	if got := socketBase("/given"); got != "/given" {
		t.Errorf("socketBase(/given) = %q", got)
	}
}
