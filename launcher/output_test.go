package launcher

import (
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

func TestUTF8CheckAcrossWrites(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		valid  bool
	}{
		{"ascii", []string{"abc", "def"}, true},
		{"two-byte split", []string{"caf\xc3", "\xa9!"}, true},
		{"four-byte split thrice", []string{"\xf0", "\x9f", "\x98", "\x80"}, true},
		{"cut at the end", []string{"caf\xc3"}, false},
		{"invalid byte", []string{"ok", "\xff", "ok"}, false},
		{"bad continuation after split", []string{"\xc3", "A"}, false},
		{"empty", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c utf8Check
			for _, w := range tt.writes {
				c.feed([]byte(w))
			}
			if c.valid() != tt.valid {
				t.Errorf("valid() = %v, want %v", c.valid(), tt.valid)
			}
		})
	}
}

func TestStdoutSinkJSONLAcrossWrites(t *testing.T) {
	s := newStdoutSink(protocol.FramingJSONL, nil, nil)
	for _, w := range []string{`{"a":`, "1}\n{", `"b":2}`} {
		s.Write([]byte(w))
	}
	s.finish()
	if len(s.events) != 2 || string(s.events[0].Event) != `{"a":1}` || string(s.events[1].Event) != `{"b":2}` {
		t.Errorf("events = %+v", s.events)
	}
}

func TestStdoutSinkTruncates(t *testing.T) {
	t.Run("raw", func(t *testing.T) {
		s := newStdoutSink(FramingRaw, nil, nil)
		s.limit = 10
		s.Write([]byte("0123456"))
		s.Write([]byte("789abc"))
		if string(s.raw) != "0123456789" || !s.truncated || s.n != 13 {
			t.Errorf("raw = %q, truncated = %v, n = %d", s.raw, s.truncated, s.n)
		}
	})
	t.Run("lines keep whole lines", func(t *testing.T) {
		s := newStdoutSink(protocol.FramingLines, nil, nil)
		s.limit = 10
		s.Write([]byte("abc\ndefghijkl\n\n"))
		s.Write([]byte("\n"))
		s.finish()
		if strings.Join(s.lines, "|") != "abc" || !s.truncated {
			t.Errorf("lines = %q, truncated = %v; want the line over budget dropped", s.lines, s.truncated)
		}
	})
}

func TestTailSinkStartsOnACharacter(t *testing.T) {
	var s tailSink
	s.Write([]byte("x"))
	for range StderrTailBytes {
		s.Write([]byte("é")) // two bytes each
	}
	tail := s.tail()
	if !strings.HasPrefix(tail, "é") || len(tail) > StderrTailBytes || len(tail) < StderrTailBytes-1 {
		t.Errorf("tail has %d bytes starting %q", len(tail), tail[:4])
	}
}
