package supervisor

import (
	"math/rand/v2"
	"testing"
)

// ringModel is the whole history a Ring stands for: every byte and its
// stream. A Ring must answer every read as a window of it.
type ringModel struct {
	data    []byte
	streams []Stream
}

func (m *ringModel) write(s Stream, p []byte) {
	m.data = append(m.data, p...)
	for range p {
		m.streams = append(m.streams, s)
	}
}

// checkRead asks r for the page at cursor and compares it with the model:
// a cursor before the ring resumes at the earliest byte and says so, one
// inside it does not, and every byte returned is the byte written at that
// cursor with its stream (issue 11 #20: a cursor one byte before the tail
// once returned a stale byte with resumed false).
func checkRead(t *testing.T, r *Ring, m *ringModel, cursor int64, limit int) {
	t.Helper()
	earliest, head := r.Bounds()
	pg, err := r.Read(cursor, limit)
	if err != nil {
		t.Fatalf("Read(%d, %d) with ring %d..%d: %v", cursor, limit, earliest, head, err)
	}
	wantCursor := max(cursor, earliest)
	if pg.Cursor != wantCursor || pg.Resumed != (cursor < earliest) {
		t.Fatalf("Read(%d, %d) with ring %d..%d: cursor %d resumed %v, want cursor %d resumed %v",
			cursor, limit, earliest, head, pg.Cursor, pg.Resumed, wantCursor, cursor < earliest)
	}
	wantNext := min(head, wantCursor+int64(min(limit, MaxPageBytes)))
	if pg.Next != wantNext || pg.Head != head || pg.Earliest != earliest {
		t.Fatalf("Read(%d, %d) with ring %d..%d: next %d head %d earliest %d, want next %d",
			cursor, limit, earliest, head, pg.Next, pg.Head, pg.Earliest, wantNext)
	}
	c := pg.Cursor
	for _, ch := range pg.Chunks {
		if ch.Cursor != c {
			t.Fatalf("Read(%d, %d): chunk at %d, want %d", cursor, limit, ch.Cursor, c)
		}
		for i := range len(ch.Text) {
			if ch.Text[i] != m.data[c] || ch.Stream != m.streams[c] {
				t.Fatalf("Read(%d, %d) with ring %d..%d: byte %d = %q (%s), want %q (%s)",
					cursor, limit, earliest, head, c, ch.Text[i], ch.Stream, m.data[c], m.streams[c])
			}
			c++
		}
	}
	if c != pg.Next {
		t.Fatalf("Read(%d, %d): chunks end at %d, next is %d", cursor, limit, c, pg.Next)
	}
}

// TestRingMatchesHistory writes random runs of both streams (ASCII, so no
// character boundary moves a cursor) into the smallest ring and reads at
// every boundary that an off-by-one would break: around the tail, around
// the head, around each wrap of the buffer and each stream switch.
func TestRingMatchesHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 20))
	for round := range 6 {
		r := NewRing(MaxPageBytes)
		var m ringModel
		writes := 80
		if round%2 == 1 {
			writes = 20000
		}
		for w := range writes {
			s := Stdout
			if rng.IntN(3) == 0 {
				s = Stderr
			}
			n := rng.IntN(3 * MaxPageBytes / 2)
			if round%2 == 1 {
				// Tiny runs switching streams: labels are dropped early
				// (capacity/64 switches at most) and the tail moves with them.
				n = 1 + rng.IntN(8)
			}
			p := make([]byte, n)
			for i := range p {
				p[i] = byte('a' + (len(m.data)+i)%26)
			}
			r.Write(s, p)
			m.write(s, p)
			if writes > 80 && w%500 != 499 {
				continue
			}
			earliest, head := r.Bounds()
			if head != int64(len(m.data)) {
				t.Fatalf("round %d: head %d after %d bytes", round, head, len(m.data))
			}
			for _, c := range []int64{0, earliest - 1, earliest, earliest + 1, head - 1, head,
				head - MaxPageBytes, (head / MaxPageBytes) * MaxPageBytes, (head/MaxPageBytes)*MaxPageBytes - 1} {
				if c < 0 || c > head {
					continue
				}
				for _, limit := range []int{1, 100, MaxPageBytes} {
					checkRead(t, r, &m, c, limit)
				}
			}
		}
	}
}

// FuzzRingMatchesHistory drives the same check from fuzzed writes: each
// byte of ops picks a stream and a length.
func FuzzRingMatchesHistory(f *testing.F) {
	f.Add([]byte{0x10, 0xff, 0x81, 0x02, 0xfe}, int64(3))
	f.Fuzz(func(t *testing.T, ops []byte, cursor int64) {
		r := NewRing(MaxPageBytes)
		var m ringModel
		for _, op := range ops {
			s := Stdout
			if op&1 == 1 {
				s = Stderr
			}
			p := make([]byte, int(op>>1)*700)
			for i := range p {
				p[i] = byte('A' + (len(m.data)+i)%26)
			}
			r.Write(s, p)
			m.write(s, p)
		}
		_, head := r.Bounds()
		if head == 0 {
			return
		}
		c := cursor % (head + 1)
		if c < 0 {
			c = -c
		}
		checkRead(t, r, &m, c, MaxPageBytes)
		checkRead(t, r, &m, c, 7)
	})
}
