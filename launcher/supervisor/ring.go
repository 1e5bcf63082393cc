package supervisor

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultRingBytes is the output kept in memory per process (DESIGN.md §5).
const DefaultRingBytes = 1 << 20

// MaxPageBytes is the largest page Read and Tail return (DESIGN.md §5).
const MaxPageBytes = 64 << 10

// Stream labels the output a byte came from.
type Stream string

// The two output streams of a process.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Chunk is a run of bytes of one stream inside a Page. Text holds whole
// UTF-8 characters when the process wrote UTF-8 (invalid bytes are passed
// as they are; encoding/json shows them as U+FFFD).
type Chunk struct {
	Stream Stream `json:"stream"`
	// Cursor is the absolute position of the chunk's first byte.
	Cursor int64  `json:"cursor"`
	Text   string `json:"text"`
}

// Page is one answer of Ring.Read or Ring.Tail. Positions are absolute
// byte cursors: byte 0 is the first byte the process ever wrote, whatever
// the ring has dropped since.
type Page struct {
	// Cursor is where the page starts. It differs from the cursor asked
	// for when that one fell before the ring (Resumed) or inside a
	// character.
	Cursor int64 `json:"cursor"`
	// Next is the cursor of the next page: Cursor plus the bytes returned.
	Next int64 `json:"next"`
	// Earliest is the first byte the ring still holds.
	Earliest int64 `json:"earliest"`
	// Head is the number of bytes written so far (the cursor of the next
	// byte to be written).
	Head int64 `json:"head"`
	// Resumed says the cursor asked for was before Earliest: the bytes in
	// between were dropped, and the page starts at Earliest. Note says so
	// in words.
	Resumed bool   `json:"resumed,omitempty"`
	Note    string `json:"note,omitempty"`
	// Chunks are the bytes of the page in order, labelled by stream.
	Chunks []Chunk `json:"chunks"`
}

// Text returns the page's bytes, both streams, in order.
func (p Page) Text() string {
	if len(p.Chunks) == 1 {
		return p.Chunks[0].Text
	}
	var n int
	for _, c := range p.Chunks {
		n += len(c.Text)
	}
	b := make([]byte, 0, n)
	for _, c := range p.Chunks {
		b = append(b, c.Text...)
	}
	return string(b)
}

// segment marks where a run of one stream starts; it lasts until the next
// segment's start (or the head).
type segment struct {
	start  int64
	stderr bool
}

// streamIndex is 0 for stdout, 1 for stderr.
func streamIndex(s Stream) int {
	if s == Stderr {
		return 1
	}
	return 0
}

func (s segment) stream() Stream {
	if s.stderr {
		return Stderr
	}
	return Stdout
}

// Ring keeps the last bytes a process wrote to stdout and stderr, labelled
// by stream and addressed by absolute cursors. Its memory is bounded
// whatever is written: the bytes by its capacity, the stream labels by
// capacity/64 switches between stdout and stderr (when a process
// alternates streams faster than that, the oldest output is dropped
// early). Writes never block and never fail. A Ring is safe for
// concurrent use; the zero value is not usable (see NewRing).
//
// A Write that ends inside a UTF-8 character holds the character's first
// bytes back until the stream's next Write (or Flush), so a run of one
// stream never ends in the middle of a character and a page never splits
// one.
type Ring struct {
	mu       sync.Mutex
	capacity int
	buf      []byte    // grows up to capacity; byte c lives at buf[c%capacity]
	tail     int64     // earliest retained cursor
	head     int64     // cursor of the next byte
	segs     []segment // a circular queue: nsegs labels from segs[s0]
	s0       int
	nsegs    int
	maxSegs  int
	pending  map[Stream]*heldRune
	written  [2]int64 // bytes appended per stream (streamIndex)
}

// heldRune is the start of a character cut by a Write.
type heldRune struct {
	b [utf8.UTFMax]byte
	n int
}

// NewRing returns an empty ring keeping the last capacity bytes (at least
// MaxPageBytes; DefaultRingBytes when capacity ≤ 0). Memory is allocated as
// output arrives, never beyond capacity plus the stream labels.
func NewRing(capacity int) *Ring {
	switch {
	case capacity <= 0:
		capacity = DefaultRingBytes
	case capacity < MaxPageBytes:
		capacity = MaxPageBytes
	}
	return &Ring{
		capacity: capacity,
		maxSegs:  max(capacity/64, 16),
		pending:  map[Stream]*heldRune{Stdout: {}, Stderr: {}},
	}
}

// Write appends p as output of stream (Stdout or Stderr; anything else is
// recorded as Stdout). It always returns len(p), nil.
func (r *Ring) Write(stream Stream, p []byte) (int, error) {
	n := len(p)
	if stream != Stderr {
		stream = Stdout
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.pending[stream]
	if h.n > 0 {
		need := runeLen(h.b[0])
		for h.n < need && len(p) > 0 && isCont(p[0]) {
			h.b[h.n] = p[0]
			h.n++
			p = p[1:]
		}
		if h.n < need && len(p) == 0 {
			return n, nil // still incomplete: wait for more
		}
		r.append(stream, h.b[:h.n])
		h.n = 0
	}
	cut := holdBack(p)
	r.append(stream, p[:cut])
	h.n = copy(h.b[:], p[cut:])
	return n, nil
}

// Flush appends the bytes held back at the end of each stream (an
// incomplete character), as they are. Call it when the process has ended.
func (r *Ring) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range []Stream{Stdout, Stderr} {
		if h := r.pending[s]; h.n > 0 {
			r.append(s, h.b[:h.n])
			h.n = 0
		}
	}
}

// Bounds returns the earliest retained cursor and the head.
func (r *Ring) Bounds() (earliest, head int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tail, r.head
}

// append writes data of stream at the head. r.mu is held.
func (r *Ring) append(stream Stream, data []byte) {
	if len(data) == 0 {
		return
	}
	r.written[streamIndex(stream)] += int64(len(data))
	if r.nsegs == 0 || r.seg(r.nsegs-1).stream() != stream {
		if r.nsegs >= r.maxSegs {
			// Too many stream switches: drop the oldest run early.
			r.tail = max(r.tail, r.seg(1).start)
			r.popSeg()
		}
		r.pushSeg(segment{start: r.head, stderr: stream == Stderr})
	}
	if len(data) > r.capacity {
		r.head += int64(len(data) - r.capacity)
		data = data[len(data)-r.capacity:]
	}
	r.grow(len(data))
	pos := int(r.head % int64(r.capacity))
	k := copy(r.buf[pos:], data)
	copy(r.buf, data[k:])
	r.head += int64(len(data))
	r.tail = max(r.tail, r.head-int64(r.capacity))
	for r.nsegs > 1 && r.seg(1).start <= r.tail {
		r.popSeg()
	}
}

// grow makes room for n more bytes before the ring first wraps: until
// then byte c is buf[c], and buf reaches its capacity before any wrap.
func (r *Ring) grow(n int) {
	need := min(r.head+int64(n), int64(r.capacity))
	if int64(len(r.buf)) >= need {
		return
	}
	size := max(int64(2*len(r.buf)), need, 4096)
	nb := make([]byte, min(size, int64(r.capacity)))
	copy(nb, r.buf)
	r.buf = nb
}

// seg returns the i-th live label (0 = the oldest).
func (r *Ring) seg(i int) segment { return r.segs[(r.s0+i)%len(r.segs)] }

func (r *Ring) popSeg() {
	r.s0 = (r.s0 + 1) % len(r.segs)
	r.nsegs--
}

// pushSeg appends a label, growing the queue (up to maxSegs) when full.
func (r *Ring) pushSeg(s segment) {
	if r.nsegs == len(r.segs) {
		grown := make([]segment, min(max(2*len(r.segs), 8), r.maxSegs))
		for i := range r.nsegs {
			grown[i] = r.seg(i)
		}
		r.segs, r.s0 = grown, 0
	}
	r.segs[(r.s0+r.nsegs)%len(r.segs)] = s
	r.nsegs++
}

func (r *Ring) at(c int64) byte { return r.buf[c%int64(r.capacity)] }

// Read returns the page starting at cursor, at most max bytes (max ≤ 0 or
// above MaxPageBytes means MaxPageBytes). Reads are stateless: pass the
// page's Next to continue. A cursor before the ring resumes at the
// earliest retained byte (Resumed and Note say so); a cursor equal to the
// head gives an empty page. Errors: ErrCursorAhead for a cursor beyond the
// head (or negative), ErrPageTooSmall when max cannot hold the next
// character.
func (r *Ring) Read(cursor int64, max int) (Page, error) {
	if max <= 0 || max > MaxPageBytes {
		max = MaxPageBytes
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cursor < 0 || cursor > r.head {
		return Page{}, fmt.Errorf("reading output at cursor %d: %w (the head is %d)", cursor, ErrCursorAhead, r.head)
	}
	var pg Page
	if cursor < r.tail {
		pg.Resumed = true
		pg.Note = fmt.Sprintf("output before byte %d was dropped (only the last %d bytes are kept); resumed at the earliest retained byte %d", r.tail, r.capacity, r.tail)
		cursor = r.tail
	}
	return r.page(pg, cursor, max)
}

// Tail returns the last n bytes or fewer (n ≤ 0 or above MaxPageBytes
// means MaxPageBytes), starting on a character boundary.
func (r *Ring) Tail(n int) Page {
	if n <= 0 || n > MaxPageBytes {
		n = MaxPageBytes
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cursor := max(r.tail, r.head-int64(n))
	pg, err := r.page(Page{}, cursor, n)
	if err != nil { // n cannot hold the next character: show nothing
		return Page{Cursor: r.head, Next: r.head, Earliest: r.tail, Head: r.head, Chunks: []Chunk{}}
	}
	return pg
}

// page fills pg from cursor (within the ring). r.mu is held.
func (r *Ring) page(pg Page, cursor int64, limit int) (Page, error) {
	cursor = r.charStart(cursor)
	end := min(r.head, cursor+int64(limit))
	if end < r.head {
		cut := r.charCut(cursor, end)
		if cut == cursor {
			return Page{}, fmt.Errorf("reading output at cursor %d: %w (%d bytes cannot hold the character there)", cursor, ErrPageTooSmall, limit)
		}
		end = cut
	}
	pg.Cursor, pg.Next, pg.Earliest, pg.Head = cursor, end, r.tail, r.head
	pg.Chunks = []Chunk{}
	i := r.segAt(cursor)
	for c := cursor; c < end; i++ {
		segEnd := end
		if i+1 < r.nsegs {
			segEnd = min(end, r.seg(i+1).start)
		}
		pg.Chunks = append(pg.Chunks, Chunk{Stream: r.seg(i).stream(), Cursor: c, Text: r.text(c, segEnd)})
		c = segEnd
	}
	return pg, nil
}

// charStart moves a cursor that points inside a character to the next
// character start. Fragments of a character whose first byte was dropped
// (at most three continuation bytes at the tail) are skipped too.
func (r *Ring) charStart(c int64) int64 {
	for k := int64(1); k < utf8.UTFMax && c-k >= r.tail; k++ {
		b := r.at(c - k)
		if isCont(b) {
			continue
		}
		if n := int64(runeLen(b)); n > k && r.contRun(c-k+1, c) {
			return min(c-k+n, r.head)
		}
		return c
	}
	if c == r.tail {
		for k := 0; k < utf8.UTFMax-1 && c < r.head && isCont(r.at(c)); k++ {
			c++
		}
	}
	return c
}

// charCut moves end back to the start of a character it would split; it
// returns end when it splits none.
func (r *Ring) charCut(start, end int64) int64 {
	for i := end - 1; i >= start && i >= end-(utf8.UTFMax-1); i-- {
		b := r.at(i)
		if isCont(b) {
			continue
		}
		n := int64(runeLen(b))
		if i+n > end && r.contRun(i+1, min(i+n, r.head)) {
			return i
		}
		return end
	}
	return end
}

// contRun reports whether every byte in [from, to) is a continuation byte.
func (r *Ring) contRun(from, to int64) bool {
	for c := from; c < to; c++ {
		if !isCont(r.at(c)) {
			return false
		}
	}
	return true
}

// segAt returns the index (for seg) of the run holding cursor c.
func (r *Ring) segAt(c int64) int {
	lo, hi := 0, r.nsegs-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if r.seg(mid).start <= c {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// text copies [from, to) out of the ring.
func (r *Ring) text(from, to int64) string {
	n := int(to - from)
	pos := int(from % int64(r.capacity))
	var sb strings.Builder
	sb.Grow(n)
	first := r.buf[pos:min(pos+n, len(r.buf))]
	sb.Write(first)
	sb.Write(r.buf[:n-len(first)])
	return sb.String()
}

func isCont(b byte) bool { return b&0xC0 == 0x80 }

// runeLen is the length a UTF-8 character starting with b claims (1 for
// ASCII and for bytes that cannot start a character).
func runeLen(b byte) int {
	switch {
	case b >= 0xF0 && b <= 0xF7:
		return 4
	case b >= 0xE0:
		if b <= 0xEF {
			return 3
		}
		return 1
	case b >= 0xC0:
		return 2
	}
	return 1
}

// holdBack returns how much of p can be appended now: all of it unless it
// ends with the first bytes of a character.
func holdBack(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		if isCont(p[i]) {
			continue
		}
		if runeLen(p[i]) > len(p)-i {
			return i
		}
		return len(p)
	}
	return len(p)
}
