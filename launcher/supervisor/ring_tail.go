package supervisor

import (
	"strings"
	"unicode/utf8"
)

// StreamTail is the end of one output stream of a process, as Status shows
// it (the bash-daemon seed's "last 4 KiB of stdout and stderr").
type StreamTail struct {
	// Text is the stream's last bytes still in the ring, at most TailBytes,
	// starting on a character boundary.
	Text string `json:"text"`
	// Written counts every byte the stream wrote (across restarts).
	Written int64 `json:"written"`
	// Truncated says Text is not all the stream wrote: read the rest with
	// Output (interleaved with the other stream) or in the log files.
	Truncated bool `json:"truncated,omitempty"`
}

// StreamTail returns the last n bytes (n ≤ 0 or above MaxPageBytes means
// MaxPageBytes) of one stream's output still in the ring, with how much
// the stream wrote. The text starts on a character boundary: a run of one
// stream never ends inside a character (Write holds its first bytes back),
// so only the first run's cut can split one, and its stray continuation
// bytes are left out.
func (r *Ring) StreamTail(s Stream, n int) StreamTail {
	if n <= 0 || n > MaxPageBytes {
		n = MaxPageBytes
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := StreamTail{Written: r.written[streamIndex(s)]}
	type span struct{ from, to int64 }
	var spans []span // newest first
	need := int64(n)
	for i := r.nsegs - 1; i >= 0 && need > 0; i-- {
		sg := r.seg(i)
		if sg.stream() != s {
			continue
		}
		from, to := max(sg.start, r.tail), r.head
		if i+1 < r.nsegs {
			to = r.seg(i + 1).start
		}
		if to <= from {
			continue
		}
		from = max(from, to-need)
		spans = append(spans, span{from, to})
		need -= to - from
	}
	var b strings.Builder
	for i := len(spans) - 1; i >= 0; i-- {
		b.WriteString(r.text(spans[i].from, spans[i].to))
	}
	text := b.String()
	for k := 0; k < utf8.UTFMax-1 && len(text) > 0 && isCont(text[0]); k++ {
		text = text[1:]
	}
	st.Text = text
	st.Truncated = int64(len(text)) < st.Written
	return st
}

// Written is how many bytes of stream s were written so far.
func (r *Ring) Written(s Stream) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written[streamIndex(s)]
}
