package launcher

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sync"
)

// Redacted replaces a secret bound value wherever toolbox reports text.
const Redacted = "[redacted]"

// Redactor replaces the secret bound values of one call (the secrets Bind
// returns) in everything toolbox reports about that call: its output as it
// arrives (Writer), error messages (Error) and other text (String).
//
// Each secret is matched as it is and, when different, as it appears
// inside a JSON string (escaped, with and without HTML escaping), so a
// jsonl event or an MCP server's result re-encoded by encoding/json
// (which writes <, > and & as \u003c, \u003e, \u0026) that carries it is
// caught too. Where two secrets overlap, the longest match at a position
// wins. A nil *Redactor (no secrets) leaves everything unchanged.
//
// Redaction is a guard against echoes, not against a tool bent on
// exfiltration: a tool holds its secret and can always print it encoded
// (reversed, base64). Confinement (net: none) is what stops it from sending
// it elsewhere.
type Redactor struct {
	patterns [][]byte // longest first
	first    [256]bool
}

// NewRedactor returns the Redactor of secrets; nil when there are none
// (empty strings are ignored: they match everywhere).
func NewRedactor(secrets []string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	add := func(s string) {
		if s == "" || seen[s] {
			return
		}
		seen[s] = true
		r.patterns = append(r.patterns, []byte(s))
		r.first[s[0]] = true
	}
	for _, s := range secrets {
		add(s)
		add(jsonEscaped(s, false))
		add(jsonEscaped(s, true))
	}
	if len(r.patterns) == 0 {
		return nil
	}
	slices.SortStableFunc(r.patterns, func(a, b []byte) int { return len(b) - len(a) })
	return r
}

// jsonEscaped is s as it appears between the quotes of a JSON string
// written by a common encoder (no HTML escaping) or, with html, by
// json.Marshal.
func jsonEscaped(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if enc.Encode(s) != nil {
		return s
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}

// String returns s with every secret replaced by Redacted.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	out, _ := r.scan(nil, []byte(s), true)
	return string(out)
}

// Error returns err with its message redacted; errors.Is and errors.As
// still reach its causes. nil stays nil, and an error without a secret is
// returned as it is.
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil {
		return err
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

// scan appends data to dst with every complete secret replaced. Unless
// final, it stops at the first position where data ends inside what could
// still become a secret, and returns that tail as rest (at most the
// longest secret's length minus one byte), to be scanned again with the
// bytes that follow.
func (r *Redactor) scan(dst, data []byte, final bool) (out, rest []byte) {
	start := 0
	for i := 0; i < len(data); {
		if !r.first[data[i]] {
			i++
			continue
		}
		matched := 0
		for _, p := range r.patterns {
			tail := data[i:]
			if len(tail) >= len(p) {
				if bytes.Equal(tail[:len(p)], p) {
					matched = len(p)
					break
				}
				continue
			}
			// A longer secret may still match once more bytes arrive:
			// hold back, so that it is never split across two writes.
			if !final && bytes.HasPrefix(p, tail) {
				dst = append(dst, data[start:i]...)
				return dst, data[i:]
			}
		}
		if matched == 0 {
			i++
			continue
		}
		dst = append(dst, data[start:i]...)
		dst = append(dst, Redacted...)
		i += matched
		start = i
	}
	return append(dst, data[start:]...), nil
}

// Writer returns a writer that passes what it is given on to w with every
// secret replaced, holding back the few bytes that could be the start of
// a secret until the next write or Flush. With a nil Redactor it returns
// w itself wrapped so that Flush is a no-op. Safe for concurrent use.
func (r *Redactor) Writer(w io.Writer) *RedactWriter {
	return &RedactWriter{r: r, w: w}
}

// RedactWriter is the writer of Redactor.Writer. Flush it once the stream
// ends: the held-back bytes are then written (redacted if they complete a
// secret, as they are otherwise).
type RedactWriter struct {
	r    *Redactor
	w    io.Writer
	mu   sync.Mutex
	held []byte
	buf  []byte
}

// Write redacts p and writes what can be written; it reports len(p) unless
// the underlying writer fails.
func (w *RedactWriter) Write(p []byte) (int, error) {
	if w.r == nil {
		return w.w.Write(p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	data := p
	if len(w.held) > 0 {
		data = append(w.held, p...)
	}
	out, rest := w.r.scan(w.buf[:0], data, false)
	w.held = append(w.held[:0:0], rest...)
	w.buf = out[:0]
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes the held-back bytes.
func (w *RedactWriter) Flush() error {
	if w.r == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	out, _ := w.r.scan(nil, w.held, true)
	w.held = nil
	_, err := w.w.Write(out)
	return err
}

// redactedError reports err with the secrets replaced; errors.Is/As still
// reach the causes.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
