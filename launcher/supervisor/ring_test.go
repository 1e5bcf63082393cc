package supervisor

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRingLabelsStreamsAndAdvances(t *testing.T) {
	r := NewRing(0)
	r.Write(Stdout, []byte("out1 "))
	r.Write(Stdout, []byte("out2 "))
	r.Write(Stderr, []byte("err1 "))
	r.Write(Stdout, []byte("out3"))
	pg, err := r.Read(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{{Stdout, 0, "out1 out2 "}, {Stderr, 10, "err1 "}, {Stdout, 15, "out3"}}
	if len(pg.Chunks) != len(want) {
		t.Fatalf("chunks = %+v, want %+v", pg.Chunks, want)
	}
	for i := range want {
		if pg.Chunks[i] != want[i] {
			t.Errorf("chunk %d = %+v, want %+v", i, pg.Chunks[i], want[i])
		}
	}
	if pg.Cursor != 0 || pg.Next != 19 || pg.Head != 19 || pg.Earliest != 0 || pg.Resumed {
		t.Errorf("page bounds = %+v", pg)
	}
	// A page in the middle of a run, then the rest from its Next.
	pg, err = r.Read(3, 9)
	if err != nil {
		t.Fatal(err)
	}
	if got := pg.Text(); got != "1 out2 er" || pg.Next != 12 {
		t.Errorf("Read(3, 9) = %q next %d, want %q next 12", got, pg.Next, "1 out2 er")
	}
	pg, _ = r.Read(pg.Next, 0)
	if pg.Text() != "r1 out3" || pg.Chunks[0].Stream != Stderr {
		t.Errorf("continuation = %+v", pg)
	}
	// At the head: an empty page, not an error.
	pg, err = r.Read(19, 0)
	if err != nil || len(pg.Chunks) != 0 || pg.Next != 19 {
		t.Errorf("Read(head) = %+v, %v", pg, err)
	}
}

func TestRingCursorBeyondHeadIsAnError(t *testing.T) {
	r := NewRing(0)
	r.Write(Stdout, []byte("abc"))
	for _, c := range []int64{4, 1 << 40, -1} {
		if _, err := r.Read(c, 0); !errors.Is(err, ErrCursorAhead) {
			t.Errorf("Read(%d) error = %v, want ErrCursorAhead", c, err)
		}
	}
}

func TestRingCursorBeforeRingResumesAndSaysSo(t *testing.T) {
	r := NewRing(MaxPageBytes) // the smallest ring
	chunk := strings.Repeat("x", 1000) + "\n"
	for range 200 { // 200 200 bytes: most of it is dropped
		r.Write(Stdout, []byte(chunk))
	}
	earliest, head := r.Bounds()
	if head != 200*1001 || head-earliest != MaxPageBytes {
		t.Fatalf("bounds = %d..%d, want the last %d of %d bytes", earliest, head, MaxPageBytes, 200*1001)
	}
	pg, err := r.Read(5, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !pg.Resumed || pg.Cursor != earliest || !strings.Contains(pg.Note, "dropped") {
		t.Errorf("page = cursor %d resumed %v note %q; want a resume at %d with a note", pg.Cursor, pg.Resumed, pg.Note, earliest)
	}
	// A cursor inside the ring is not resumed.
	pg, _ = r.Read(earliest+10, 100)
	if pg.Resumed || pg.Cursor != earliest+10 {
		t.Errorf("in-ring read = %+v", pg)
	}
}

func TestRingNeverSplitsACharacter(t *testing.T) {
	text := strings.Repeat("aé€😀ß", 300) // 1, 2, 3, 4 and 2 byte characters
	for _, write := range []int{1, 2, 3, 5, 7} {
		r := NewRing(0)
		b := []byte(text)
		// Odd-sized writes cut characters; stderr lines interleave.
		for i := 0; i < len(b); i += write {
			r.Write(Stdout, b[i:min(i+write, len(b))])
			if i%97 == 0 {
				r.Write(Stderr, []byte("e"))
			}
		}
		for _, size := range []int{4, 5, 6, 9, 64} {
			var out strings.Builder
			for c := int64(0); ; {
				pg, err := r.Read(c, size)
				if err != nil {
					t.Fatalf("write %d, page %d: %v", write, size, err)
				}
				for _, ch := range pg.Chunks {
					if !utf8.ValidString(ch.Text) {
						t.Fatalf("write %d, page %d: chunk %q splits a character", write, size, ch.Text)
					}
					if ch.Stream == Stdout {
						out.WriteString(ch.Text)
					}
				}
				if pg.Next == pg.Head {
					break
				}
				if pg.Next == c {
					t.Fatalf("write %d, page %d: cursor %d does not advance", write, size, c)
				}
				c = pg.Next
			}
			if out.String() != text {
				t.Fatalf("write %d, page %d: stdout read back differs", write, size)
			}
		}
	}
}

func TestRingPageTooSmallIsAnError(t *testing.T) {
	r := NewRing(0)
	r.Write(Stdout, []byte("😀"))
	if _, err := r.Read(0, 3); !errors.Is(err, ErrPageTooSmall) {
		t.Errorf("Read(0, 3) of a 4-byte character: error %v, want ErrPageTooSmall", err)
	}
	if pg, err := r.Read(0, 4); err != nil || pg.Text() != "😀" {
		t.Errorf("Read(0, 4) = %q, %v", pg.Text(), err)
	}
}

func TestRingCursorInsideACharacterMovesToTheNext(t *testing.T) {
	r := NewRing(0)
	r.Write(Stdout, []byte("a€b"))
	pg, err := r.Read(2, 0) // inside "€" (bytes 1..3)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Cursor != 4 || pg.Text() != "b" {
		t.Errorf("Read(2) = cursor %d %q, want cursor 4 %q", pg.Cursor, pg.Text(), "b")
	}
}

func TestRingHoldsIncompleteCharacterUntilFlush(t *testing.T) {
	r := NewRing(0)
	r.Write(Stdout, []byte{'a', 0xE2, 0x82}) // "a" and two thirds of "€"
	if _, head := r.Bounds(); head != 1 {
		t.Fatalf("head = %d, want 1 (the cut character held back)", head)
	}
	r.Write(Stderr, []byte("x"))
	r.Write(Stdout, []byte{0xAC})
	pg, _ := r.Read(0, 0)
	if pg.Text() != "ax€" {
		t.Errorf("text = %q, want %q", pg.Text(), "ax€")
	}
	r.Write(Stdout, []byte{0xF0})
	r.Flush() // the process ended inside a character: keep the byte anyway
	if _, head := r.Bounds(); head != 6 {
		t.Errorf("head after flush = %d, want 6", head)
	}
}

func TestRingTail(t *testing.T) {
	r := NewRing(0)
	r.Write(Stdout, []byte("hello "))
	r.Write(Stderr, []byte("wörld"))
	pg := r.Tail(5) // "örld" is 5 bytes
	if pg.Text() != "örld" || pg.Next != pg.Head {
		t.Errorf("Tail(5) = %q", pg.Text())
	}
	pg = r.Tail(4) // would start inside "ö"
	if pg.Text() != "rld" {
		t.Errorf("Tail(4) = %q, want %q", pg.Text(), "rld")
	}
}

func TestRingMemoryIsBounded(t *testing.T) {
	r := NewRing(0)
	// 256 MiB in 32 KiB writes.
	chunk := []byte(strings.Repeat("0123456789abcdef", 2048))
	for range 8192 {
		r.Write(Stdout, chunk)
	}
	if len(r.buf) != DefaultRingBytes {
		t.Errorf("buffer = %d bytes, want %d", len(r.buf), DefaultRingBytes)
	}
	earliest, head := r.Bounds()
	if head != 256<<20 || head-earliest != DefaultRingBytes {
		t.Errorf("bounds %d..%d", earliest, head)
	}
	// Alternating streams byte by byte: labels are bounded too.
	for i := range 1 << 20 {
		s := Stdout
		if i%2 == 1 {
			s = Stderr
		}
		r.Write(s, []byte{'x'})
	}
	if r.nsegs > r.maxSegs || cap(r.segs) > r.maxSegs {
		t.Errorf("%d live labels (cap %d), want at most %d", r.nsegs, cap(r.segs), r.maxSegs)
	}
	pg, err := r.Read(0, 0)
	if err != nil || !pg.Resumed {
		t.Errorf("read after alternation: %+v, %v", pg.Cursor, err)
	}
}
