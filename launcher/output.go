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

// MaxResultBytes is the output budget of a call (Request.MaxResultBytes
// when it does not set one): what a Result keeps of stdout, counted as the
// JSON text it becomes (see jsonCost) plus EventOverheadBytes for each
// event or line, so that neither the shape of the output (100 MB of
// newlines, one huge line, many tiny events) nor its encoding can make a
// call hold much more. Beyond it Result.Truncated is set and the rest is
// only counted; a stream to Request.Stdout is never cut.
const MaxResultBytes = 32 << 20

// EventOverheadBytes is what the budget counts for each event or line a
// Result keeps on top of its text: its Event or string header and its
// share of the slice that holds it. 100 MB of "\n" once took 7 GB as
// 100 million empty lines counted as 0 bytes each.
const EventOverheadBytes = 128

// MaxInvalidReports bounds Result.Invalid.
const MaxInvalidReports = 100

// StderrTailBytes is how much of the end of stderr a Result keeps.
const StderrTailBytes = 4 << 10

// InvalidEvent reports one invalid jsonl line of a call whose events were
// only streamed (Request.StreamOnly): its number among the events (from 1)
// and why it is invalid.
type InvalidEvent struct {
	N     int    `json:"n"`
	Error string `json:"error"`
}

// stdoutSink receives the tool's stdout from one goroutine (os/exec's
// copier) and is read only after the process is done.
type stdoutSink struct {
	forward io.Writer // Request.Stdout, nil when not streaming
	fwdErr  error     // first error writing to forward; forwarding stops

	framing   string
	keepRaw   bool // buffer raw bytes (raw and chunks framing, not streaming)
	raw       []byte
	validator EventValidator // jsonl, nil when no schema is declared
	// streamOnly keeps nothing of what reached forward: events are only
	// counted and checked, the first invalid ones reported.
	streamOnly bool

	n         int64 // bytes seen
	limit     int   // the budget, MaxResultBytes unless the Request says
	kept      int   // budget spent on raw, events or lines
	truncated bool
	utf8      utf8Check

	partial       []byte // the current unterminated line
	partialCapped bool   // the current line went over what can be kept
	events        []Event
	costs         []int // each kept event's cost (stream tools drop the oldest)
	lines         []string
	keepEvents    int // > 0: keep only the last keepEvents events (stream tools)
	elided        int // events dropped to keep the last keepEvents
	count         int // events seen
	invalid       []InvalidEvent
	invalidCount  int

	// par validates jsonl events in batches on other goroutines
	// (output_parallel.go); nil: each where its line ends. Set at the
	// first write, once keepEvents and streamOnly are.
	par     *parallelEvents
	parInit bool
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
		if !s.parInit {
			s.parInit = true
			if s.parallelFor() {
				s.par = newParallelEvents()
			}
		}
		s.split(p)
		if s.par != nil {
			s.dispatch()
		}
	}
	return len(p), nil
}

// take returns the prefix of p whose JSON text still fits in the budget.
func (s *stdoutSink) take(p []byte) []byte {
	if s.truncated {
		return nil
	}
	n, cost := prefixWithin(p, s.limit-s.kept)
	if n < len(p) {
		s.truncated = true
	}
	s.kept += cost
	return p[:n]
}

// lineRoom is how many bytes of the current line can still be kept: a
// line's cost is at least its length.
func (s *stdoutSink) lineRoom() int {
	switch {
	case s.streamOnly && s.framing == protocol.FramingLines:
		return 0 // lines are not checked: nothing to hold
	case s.streamOnly || s.keepEvents > 0:
		return s.limit - EventOverheadBytes // older events can make room
	}
	return s.limit - s.kept - EventOverheadBytes
}

// split frames p into lines. Once the budget is spent nothing more is
// framed (the line that overflowed it is dropped whole by endLine), but
// for a stream tool, which keeps its last events, and a call that keeps
// nothing.
func (s *stdoutSink) split(p []byte) {
	for len(p) > 0 && !s.truncated {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !s.partialCapped {
			room := s.lineRoom() - len(s.partial)
			if len(chunk) > room {
				chunk, s.partialCapped = chunk[:max(room, 0)], true
			}
			s.partial = appendWithin(s.partial, chunk, s.lineRoom())
			if s.partialCapped && !s.streamOnly && s.keepEvents == 0 {
				s.partial = nil // it will be dropped whole: hold nothing
			}
		}
		if i < 0 {
			return
		}
		s.endLine()
		p = p[i+1:]
	}
}

// appendWithin appends p to b, growing b at most to limit bytes of
// capacity: plain append doubles, which held twice the budget for one line.
func appendWithin(b, p []byte, limit int) []byte {
	if need := len(b) + len(p); need > cap(b) {
		grown := make([]byte, len(b), min(max(2*cap(b), need, 512), max(limit, need)))
		copy(grown, b)
		b = grown
	}
	return append(b, p...)
}

// endLine delivers the current line: kept while the budget lasts, else
// dropped and Truncated set.
func (s *stdoutSink) endLine() {
	line, capped := s.partial, s.partialCapped
	s.partial, s.partialCapped = s.partial[:0], false
	switch s.framing {
	case protocol.FramingLines:
		if s.streamOnly {
			return
		}
		cost := textCost(line) + EventOverheadBytes
		if capped || s.kept+cost > s.limit {
			s.truncated = true
			return
		}
		s.kept += cost
		s.lines = append(s.lines, string(line))
	case protocol.FramingJSONL:
		if !capped && len(bytes.TrimSpace(line)) == 0 {
			return // a blank line is a separator, not an event
		}
		if s.par != nil {
			if s.queue(line, capped) {
				return
			}
			// Too long to batch: validated here, after every line before it.
			if s.drain(); s.truncated {
				return // those ended framing: this line never was an event
			}
		}
		s.count++
		if capped && !s.streamOnly && s.keepEvents == 0 {
			s.truncated = true
			return
		}
		s.use(s.event(line, capped))
	}
}

// use reports (a call that keeps no events) or keeps a counted event.
func (s *stdoutSink) use(e Event) {
	if s.streamOnly {
		s.report(e)
		return
	}
	s.keep(e)
}

// report checks one event of a call that keeps none, keeping the first
// MaxInvalidReports invalid ones.
func (s *stdoutSink) report(e Event) {
	if !e.Invalid {
		return
	}
	s.invalidCount++
	if len(s.invalid) < MaxInvalidReports {
		s.invalid = append(s.invalid, InvalidEvent{N: s.count, Error: protocol.Truncate(e.Error, 1<<10)})
	}
}

// keep adds e to the events within the budget: a stream tool drops its
// oldest events to make room (and keeps at most keepEvents), another call
// stops keeping at the first event that does not fit.
func (s *stdoutSink) keep(e Event) {
	cost := EventCost(e)
	if s.keepEvents == 0 {
		if s.kept+cost > s.limit {
			s.truncated = true
			return
		}
		s.kept += cost
		s.events = append(s.events, e)
		return
	}
	if cost > s.limit {
		s.elided++
		s.truncated = true
		return
	}
	s.events, s.costs = append(s.events, e), append(s.costs, cost)
	s.kept += cost
	for len(s.events) > s.keepEvents || s.kept > s.limit {
		s.kept -= s.costs[0]
		s.events, s.costs = s.events[1:], s.costs[1:]
		s.elided++
	}
}

// EventCost is what an Event counts against an output budget: its JSON
// text (the valid event's, or the raw line's and the error's) and
// EventOverheadBytes. A front-end that caps what it returns counts alike.
func EventCost(e Event) int {
	return len(e.Event) + textCost([]byte(e.Raw)) + len(e.Error) + EventOverheadBytes
}

// event validates one jsonl line: against the declared schema when there is
// one, else only as JSON. A capped line (longer than can be held) is
// invalid, holding the part that was read. A valid event of a call that
// keeps none is the zero Event (not kept, not copied). It reads only what
// is fixed before the first write: output_parallel.go calls it from
// several goroutines at once.
func (s *stdoutSink) event(line []byte, capped bool) Event {
	if capped {
		return Event{Invalid: true, Raw: string(line), Error: fmt.Sprintf("line longer than the %d-byte output budget; cut there", s.limit)}
	}
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
	if s.streamOnly {
		return Event{}
	}
	return Event{Event: json.RawMessage(bytes.Clone(line))}
}

// finish delivers an unterminated last line, and every event still being
// validated.
func (s *stdoutSink) finish() {
	s.drain()
	if (s.framing == protocol.FramingJSONL || s.framing == protocol.FramingLines) && (len(s.partial) > 0 || s.partialCapped) {
		s.endLine()
	}
	s.stopWorkers()
}

// jsonCost is how many bytes each byte takes in the JSON text of a result
// (encoding/json, HTML not escaped): control characters become \n or
// \u00XX, '"' and '\' are escaped. A byte from 0x80 counts 2: enough for
// base64 (binary output, 4/3), U+2028 and U+2029 (3 bytes written as 6)
// and text that is not UTF-8 (one byte written as \ufffd) once the bytes
// around it are counted too.
var jsonCost = func() (t [256]uint8) {
	for b := range t {
		switch {
		case b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f' || b == '"' || b == '\\':
			t[b] = 2
		case b < 0x20:
			t[b] = 6
		case b >= 0x80:
			t[b] = 2
		default:
			t[b] = 1
		}
	}
	return t
}()

// textCost is what p counts against the budget (jsonCost).
func textCost(p []byte) int {
	n := 0
	for _, b := range p {
		n += int(jsonCost[b])
	}
	return n
}

// prefixWithin returns the longest prefix of p whose cost is at most room,
// as its length and its cost.
func prefixWithin(p []byte, room int) (n, cost int) {
	if len(p)*2 <= room { // every byte costs at most 6; most cost 1 or 2
		if c := textCost(p); c <= room {
			return len(p), c
		}
	}
	for n < len(p) {
		c := int(jsonCost[p[n]])
		if cost+c > room {
			break
		}
		cost += c
		n++
	}
	return n, cost
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
