package launcher

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/toolbox-dev/toolbox/protocol"
)

// FramingRaw is v1's output framing, as protocol.Describe.Framing names
// it: stdout is one result, raw bytes.
const FramingRaw = ""

// MaxResultBytes bounds how much of stdout a Result keeps in memory
// (Output, or the lines of Events and Lines). Beyond it Result.Truncated is
// set and the rest is only counted; a stream to Request.Stdout is never
// cut.
const MaxResultBytes = 32 << 20

// StderrTailBytes is how much of the end of stderr a Result keeps.
const StderrTailBytes = 4 << 10

// stdoutSink receives the tool's stdout from one goroutine (os/exec's
// copier) and is read only after the process is done.
type stdoutSink struct {
	forward io.Writer // Request.Stdout, nil when not streaming
	fwdErr  error     // first error writing to forward; forwarding stops

	framing   string
	keepRaw   bool // buffer raw bytes (raw and chunks framing, not streaming)
	raw       []byte
	validator EventValidator // jsonl, nil when no schema is declared

	n         int64 // bytes seen
	limit     int   // MaxResultBytes; smaller in tests
	kept      int   // bytes kept in raw, events or lines
	truncated bool
	utf8      utf8Check

	partial       []byte // the current unterminated line
	partialCapped bool   // the current line went over the budget
	events        []Event
	lines         []string
	keepEvents    int // > 0: keep only the last keepEvents events (stream tools)
	elided        int // events dropped to keep the last keepEvents
}

func newStdoutSink(framing string, forward io.Writer, v EventValidator) *stdoutSink {
	return &stdoutSink{
		forward:   forward,
		framing:   framing,
		limit:     MaxResultBytes,
		keepRaw:   forward == nil && (framing == FramingRaw || framing == protocol.FramingChunks),
		validator: v,
	}
}

// Write never fails: a tool must never block or die because the caller
// stopped reading; a forwarding error is kept and reported after the run.
func (s *stdoutSink) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	s.utf8.feed(p)
	if s.forward != nil && s.fwdErr == nil {
		if _, err := s.forward.Write(p); err != nil {
			s.fwdErr = err
		}
	}
	switch {
	case s.keepRaw:
		s.raw = append(s.raw, s.take(p)...)
	case s.framing == protocol.FramingJSONL || s.framing == protocol.FramingLines:
		s.split(p)
	}
	return len(p), nil
}

// take returns the prefix of p that still fits in the budget.
func (s *stdoutSink) take(p []byte) []byte {
	n, room := len(p), s.limit-s.kept
	if n > room {
		n = max(room, 0)
		s.truncated = true
	}
	s.kept += n
	return p[:n]
}

// split frames p into lines. Once the budget is spent nothing more is
// framed (the partial line that overflowed it is dropped by endLine).
func (s *stdoutSink) split(p []byte) {
	for len(p) > 0 && !s.truncated {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !s.partialCapped {
			keep := s.take(chunk)
			if len(keep) < len(chunk) {
				s.partialCapped = true
			}
			s.partial = append(s.partial, keep...)
		}
		if i < 0 {
			return
		}
		s.endLine()
		p = p[i+1:]
	}
}

// endLine delivers the current line, unless it went over the budget (then
// it is dropped whole and Truncated says so).
func (s *stdoutSink) endLine() {
	line := s.partial
	s.partial = s.partial[:0]
	if s.partialCapped {
		s.partialCapped = false
		return
	}
	switch s.framing {
	case protocol.FramingLines:
		s.lines = append(s.lines, string(line))
	case protocol.FramingJSONL:
		if len(bytes.TrimSpace(line)) == 0 {
			return // a blank line is a separator, not an event
		}
		s.events = append(s.events, s.event(line))
		if s.keepEvents > 0 && len(s.events) > s.keepEvents {
			// A stream keeps only its last events; the budget follows.
			drop := s.events[0]
			s.kept -= len(drop.Event) + len(drop.Raw)
			s.events = s.events[1:]
			s.elided++
		}
	}
}

// event validates one jsonl line: against the declared schema when there is
// one, else only as JSON.
func (s *stdoutSink) event(line []byte) Event {
	var err error
	if s.validator != nil {
		_, err = s.validator.Validate(line)
	} else if !json.Valid(line) {
		var v any
		if err = json.Unmarshal(line, &v); err == nil {
			err = fmt.Errorf("not a JSON value")
		}
	}
	if err != nil {
		return Event{Invalid: true, Raw: string(line), Error: err.Error()}
	}
	return Event{Event: json.RawMessage(bytes.Clone(line))}
}

// finish delivers an unterminated last line.
func (s *stdoutSink) finish() {
	if (s.framing == protocol.FramingJSONL || s.framing == protocol.FramingLines) && (len(s.partial) > 0 || s.partialCapped) {
		s.endLine()
	}
}

// utf8Check validates a byte stream incrementally, carrying an incomplete
// character across writes.
type utf8Check struct {
	invalid bool
	pending []byte // at most utf8.UTFMax-1 bytes of a character cut by a write
}

func (c *utf8Check) feed(p []byte) {
	if c.invalid {
		return
	}
	if len(c.pending) > 0 {
		p = append(c.pending, p...)
		c.pending = nil
	}
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(p[:cut]) {
		c.invalid = true
		return
	}
	c.pending = append([]byte(nil), p[cut:]...)
}

// valid reports whether everything fed was UTF-8, ending on a whole character.
func (c *utf8Check) valid() bool { return !c.invalid && len(c.pending) == 0 }

// tailSink keeps the last StderrTailBytes of stderr and passes everything
// through to forward (when non-nil) as it arrives.
type tailSink struct {
	forward io.Writer
	buf     []byte
}

func (t *tailSink) Write(p []byte) (int, error) {
	if t.forward != nil {
		// Diagnostics are best effort: a closed terminal must not stop the tool.
		_, _ = t.forward.Write(p)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*StderrTailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-StderrTailBytes:]...)
	}
	return len(p), nil
}

// tail returns the last StderrTailBytes, starting on a character boundary.
func (t *tailSink) tail() string {
	b := t.buf
	if len(b) > StderrTailBytes {
		b = b[len(b)-StderrTailBytes:]
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return string(b)
}
