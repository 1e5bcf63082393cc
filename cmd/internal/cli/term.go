package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"unicode/utf8"
)

// A tool's output printed to a terminal must not drive that terminal:
// escape sequences can set the clipboard (OSC 52), the window title, or
// rewrite what is on screen (issue 10 #12). When stdout or stderr is a
// terminal, TerminalSafe makes every control character of what is printed
// there visible instead: C0 controls but newline and tab in caret notation
// (ESC as ^[, CR as ^M), DEL as ^?, C1 controls (U+0080..U+009F) as \u009b,
// and bytes 0x80..0x9F that are not part of a UTF-8 character as \x9b. So
// an ESC [ 3 1 m arrives as the text ^[[31m. Output to a pipe or a file is
// left as it is, and so is --json output (WriteJSON writes past the filter):
// JSON escapes C0 controls itself.

// TerminalSafe returns s with Out and Err wrapped in the filter when they
// are terminals. In is left as it is.
func TerminalSafe(s IOStreams) IOStreams {
	s.Out, s.Err = terminalSafe(s.Out), terminalSafe(s.Err)
	return s
}

func terminalSafe(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return &termWriter{w: w}
	}
	return w
}

// termWriter is the filter: it holds back the bytes of a UTF-8 character
// split across two writes until the rest arrives (or Flush).
type termWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
}

// Write filters p; it reports len(p) unless the terminal fails.
func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := append(t.pending, p...)
	out, rest := neutralize(nil, data, false)
	t.pending = append(t.pending[:0:0], rest...)
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what was held back.
func (t *termWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	out, _ := neutralize(nil, t.pending, true)
	t.pending = nil
	_, err := t.w.Write(out)
	return err
}

// rawWriter is the writer under the terminal filter, for output that is
// already safe and must stay byte-exact (--json).
func rawWriter(w io.Writer) io.Writer {
	if t, ok := w.(*termWriter); ok {
		_ = t.Flush()
		return t.w
	}
	return w
}

// flushTerminal writes what a filter of w still holds.
func flushTerminal(w io.Writer) {
	if t, ok := w.(*termWriter); ok {
		_ = t.Flush()
	}
}

// neutralize appends data to dst with every control character made
// visible. Unless final, an incomplete UTF-8 character at the end is
// returned as rest.
func neutralize(dst, data []byte, final bool) (out, rest []byte) {
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '\n' || c == '\t' || c >= 0x20 && c < 0x7f:
			dst = append(dst, c)
			i++
			continue
		case c < 0x20:
			dst = append(dst, '^', c+0x40)
			i++
			continue
		case c == 0x7f:
			dst = append(dst, '^', '?')
			i++
			continue
		}
		if !final && !utf8.FullRune(data[i:]) {
			return dst, data[i:]
		}
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if c <= 0x9f {
				dst = fmt.Appendf(dst, `\x%02x`, c)
			} else {
				dst = append(dst, c)
			}
		case r >= 0x80 && r <= 0x9f:
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, data[i:i+size]...)
		}
		i += size
	}
	return dst, nil
}
