package launcher

import (
	"io"
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
		s.limit = 10 + EventOverheadBytes
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

// TestStdoutSinkBudgetCountsWhatIsKept: the budget counts each kept line
// or event with EventOverheadBytes and its JSON text, so pathological
// shapes keep at most the budget: 100 MB of "\n" kept 100 million empty
// lines (7 GB) when only line bytes were counted.
func TestStdoutSinkBudgetCountsWhatIsKept(t *testing.T) {
	const limit = 1 << 20
	feed := func(s *stdoutSink, chunk string, times int) {
		for range times {
			s.Write([]byte(chunk))
		}
		s.finish()
	}
	newlines := strings.Repeat("\n", 64<<10)
	t.Run("only newlines, lines framing", func(t *testing.T) {
		s := newStdoutSink(protocol.FramingLines, nil, nil)
		s.limit = limit
		feed(s, newlines, 100) // 6.5 MB of empty lines
		if !s.truncated || len(s.lines) != limit/EventOverheadBytes || s.kept > limit {
			t.Errorf("kept %d lines (cost %d), truncated %v; want %d", len(s.lines), s.kept, s.truncated, limit/EventOverheadBytes)
		}
	})
	t.Run("many tiny events", func(t *testing.T) {
		s := newStdoutSink(protocol.FramingJSONL, nil, nil)
		s.limit = limit
		feed(s, strings.Repeat("1\n", 32<<10), 100)
		if !s.truncated || len(s.events) != limit/(1+EventOverheadBytes) {
			t.Errorf("kept %d events, truncated %v", len(s.events), s.truncated)
		}
	})
	t.Run("invalid events count their error and escapes", func(t *testing.T) {
		s := newStdoutSink(protocol.FramingJSONL, nil, nil)
		s.limit = limit
		feed(s, strings.Repeat("\x01", 1000)+"\n", 1000)
		if !s.truncated || len(s.events) == 0 || s.kept > limit {
			t.Fatalf("kept %d events costing %d", len(s.events), s.kept)
		}
		if per := EventCost(s.events[0]); per < 6000 {
			t.Errorf("an invalid line of 1000 control characters costs %d, less than its JSON text", per)
		}
	})
	t.Run("one huge line", func(t *testing.T) {
		s := newStdoutSink(protocol.FramingJSONL, nil, nil)
		s.limit = limit
		feed(s, strings.Repeat("x", 64<<10), 100)
		if !s.truncated || len(s.events) != 0 || cap(s.partial) > 2*limit {
			t.Errorf("a line over the budget: %d events, held %d bytes", len(s.events), cap(s.partial))
		}
	})
	t.Run("chunks of control characters", func(t *testing.T) {
		s := newStdoutSink(protocol.FramingChunks, nil, nil)
		s.limit = limit
		feed(s, strings.Repeat("\x00", 64<<10), 100)
		if !s.truncated || len(s.raw) != limit/6 {
			t.Errorf("kept %d raw bytes, want %d (each is 6 bytes of JSON)", len(s.raw), limit/6)
		}
	})
	t.Run("a stream keeps its last events within the budget", func(t *testing.T) {
		s := newStdoutSink(protocol.FramingJSONL, nil, nil)
		s.limit, s.keepEvents = limit, 1000
		feed(s, `"`+strings.Repeat("y", 10<<10)+"\"\n", 500)
		if s.kept > limit || len(s.events) != limit/(10<<10+2+EventOverheadBytes) || s.elided != 500-len(s.events) {
			t.Errorf("kept %d events (cost %d), elided %d", len(s.events), s.kept, s.elided)
		}
	})
	t.Run("stream only keeps nothing", func(t *testing.T) {
		s := newStdoutSink(protocol.FramingJSONL, io.Discard, nil)
		s.limit, s.streamOnly = limit, true
		feed(s, "{}\nbad\n", 10000)
		if len(s.events) != 0 || s.count != 20000 || s.invalidCount != 10000 || len(s.invalid) != MaxInvalidReports || s.invalid[0].N != 2 {
			t.Errorf("stream only: %d events kept, %d counted, %d invalid (%d reported, first %+v)", len(s.events), s.count, s.invalidCount, len(s.invalid), s.invalid[0])
		}
	})
}
