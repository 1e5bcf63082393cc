// Package tail keeps the end of a stream: the last bytes a child wrote on
// stderr, for the message that explains why it failed. plugins, probe and
// launcher each keep a private copy of the same idea; new code uses this
// one.
package tail

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Buffer is an io.Writer that keeps the last Max bytes written to it. The
// zero value keeps nothing; it is safe for concurrent use.
type Buffer struct {
	// Max is how many bytes are kept.
	Max int

	mu   sync.Mutex
	data []byte
}

// Write keeps the end of p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Max <= 0 {
		return len(p), nil
	}
	b.data = append(b.data, p...)
	// Trim only once twice the size is held, so that a stream of small
	// writes is not copied at every write.
	if len(b.data) > 2*b.Max {
		b.data = append(b.data[:0], b.data[len(b.data)-b.Max:]...)
	}
	return len(p), nil
}

// String returns the kept bytes, at most Max, starting on a character
// boundary, with surrounding white space removed.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.data
	if len(d) > b.Max {
		d = d[len(d)-b.Max:]
		for i := 0; i < utf8.UTFMax-1 && len(d) > 0 && !utf8.RuneStart(d[0]); i++ {
			d = d[1:]
		}
	}
	return strings.TrimSpace(string(d))
}
