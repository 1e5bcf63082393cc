package supervisor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/protocol"
)

// MaxEventBytes bounds one output line (jsonl and lines framing). A longer
// line is delivered as an invalid event holding its first MaxEventBytes,
// so a process that never writes a newline cannot grow memory.
const MaxEventBytes = 64 << 10

// framer turns a process's stdout into events and watches for the ready
// line. Write is called from one goroutine (os/exec's stdout copier).
type framer struct {
	framing   string         // protocol.FramingJSONL, FramingLines, FramingChunks; "" = no events
	validator EventValidator // jsonl; nil checks JSON syntax only
	readyRe   *regexp.Regexp // nil: no ready line awaited
	onReady   func()
	// onLongLine, when set, is told of each startup line longer than
	// MaxEventBytes: it is cut, so it is never taken for the ready line.
	onLongLine func()
	emit       func(launcher.Event)
	// want, when set, is asked before an event is built (framed and
	// validated); when it says no, skip is called instead. Under a flood
	// most events are only counted, so they are not built.
	want func() bool
	skip func()

	ready bool   // events flow (no ready line awaited, or it came)
	line  []byte // the current unterminated line, at most MaxEventBytes
	over  bool   // the current line went over MaxEventBytes

	// pos counts the stdout bytes written to the framer; end is the
	// position just past the event being emitted (its line's newline, or
	// its chunk's last byte), for emit to read: a send keeps only events
	// that end past its own position (stdout_pipe.go).
	pos, end int64
}

// newFramer returns a framer; readyRe nil means the process is ready
// already as far as events go. Lines up to and including the ready line
// are startup output: they stay in the ring and are no events.
func newFramer(framing string, v EventValidator, readyRe *regexp.Regexp, onReady func(), emit func(launcher.Event)) *framer {
	return &framer{framing: framing, validator: v, readyRe: readyRe, onReady: onReady, emit: emit, ready: readyRe == nil}
}

// Write frames p. It never fails.
func (f *framer) Write(p []byte) (int, error) {
	n := len(p)
	f.pos += int64(n)
	if f.framing == protocol.FramingChunks && f.ready {
		f.end = f.pos
		f.chunk(p)
		return n, nil
	}
	if f.framing == "" && f.ready {
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if room := MaxEventBytes - len(f.line); len(part) > room {
			f.line = append(f.line, part[:max(room, 0)]...)
			f.over = true
		} else {
			f.line = append(f.line, part...)
		}
		if i < 0 {
			return n, nil
		}
		p = p[i+1:]
		f.end = f.pos - int64(len(p))
		f.endLine()
		if f.ready && f.framing == protocol.FramingChunks && len(p) > 0 {
			// The ready line came in this write: the rest is the first chunk.
			f.end = f.pos
			f.chunk(p)
			return n, nil
		}
		if f.ready && f.framing == "" {
			return n, nil
		}
	}
	return n, nil
}

// finish delivers an unterminated last line. Call it once stdout is closed.
func (f *framer) finish() {
	if len(f.line) > 0 || f.over {
		f.end = f.pos
		f.endLine()
	}
}

func (f *framer) endLine() {
	line, over := f.line, f.over
	f.line, f.over = f.line[:0], false
	if !f.ready {
		if over {
			// Only its first MaxEventBytes were kept: a match there could
			// be undone by the rest (a 2 MB line once made a service
			// "ready" that was not). A line too long to judge is no match.
			if f.onLongLine != nil {
				f.onLongLine()
			}
			return
		}
		if f.readyRe.Match(bytes.TrimSuffix(line, []byte("\r"))) {
			f.ready = true
			if f.onReady != nil {
				f.onReady()
			}
		}
		return
	}
	switch f.framing {
	case protocol.FramingJSONL:
		if !over && len(bytes.TrimSpace(line)) == 0 {
			return // a blank line separates, it is no event
		}
		if f.wanted() {
			f.emit(jsonlEvent(line, over, f.validator))
		}
	case protocol.FramingLines:
		switch {
		case !f.wanted():
		case over:
			f.emit(tooLong(line))
		default:
			f.emit(launcher.Event{Event: rawString(string(line))})
		}
	}
}

func (f *framer) chunk(p []byte) {
	if f.wanted() {
		f.emit(launcher.Event{Event: rawString(string(p))})
	}
}

// wanted asks want, calling skip when the event is not wanted.
func (f *framer) wanted() bool {
	if f.want == nil || f.want() {
		return true
	}
	f.skip()
	return false
}

// jsonlEvent validates one jsonl line: against the schema when there is
// one, else as JSON only. Invalid lines become invalid events, never dropped.
func jsonlEvent(line []byte, over bool, v EventValidator) launcher.Event {
	if over {
		return tooLong(line)
	}
	var err error
	if v != nil {
		_, err = v.Validate(line)
	} else if !json.Valid(line) {
		err = fmt.Errorf("event is not JSON")
	}
	if err != nil {
		return launcher.Event{Invalid: true, Raw: string(line), Error: err.Error()}
	}
	// A valid line is one JSON value on one line already: kept as it is
	// (surrounding white space and a "\r" trimmed), not re-encoded.
	return launcher.Event{Event: json.RawMessage(bytes.Clone(bytes.TrimSpace(line)))}
}

// tooLong is the invalid event of a line cut at MaxEventBytes.
func tooLong(line []byte) launcher.Event {
	raw := line[:holdBack(line)]
	if !utf8.Valid(raw) {
		raw = line
	}
	return launcher.Event{Invalid: true, Raw: string(raw), Error: fmt.Sprintf("line longer than %d bytes; cut there, the rest of it dropped", MaxEventBytes)}
}
