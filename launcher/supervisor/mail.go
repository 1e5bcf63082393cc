package supervisor

import (
	"fmt"
	"sync"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
)

// mailbox is one session's mail: append-only, read with a cursor, never
// consumed; bounded by a number of mails and a byte budget (the oldest
// mails are dropped first).
type mailbox struct {
	mu       sync.Mutex
	mails    []Mail
	sizes    []int
	m0       int   // mails[m0:] are kept
	next     int64 // Seq of the next mail
	bytes    int
	maxMails int
	maxBytes int
	subs     map[int]chan Mail
	nextSub  int
}

func newMailbox(maxMails, maxBytes int) *mailbox {
	return &mailbox{next: 1, maxMails: maxMails, maxBytes: maxBytes, subs: map[int]chan Mail{}}
}

// add appends m (Seq and Time are set here) and nudges subscribers.
func (b *mailbox) add(m Mail) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m.Seq = b.next
	b.next++
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	size := mailSize(m)
	b.mails = append(b.mails, m)
	b.sizes = append(b.sizes, size)
	b.bytes += size
	for len(b.mails)-b.m0 > 1 && (len(b.mails)-b.m0 > b.maxMails || b.bytes > b.maxBytes) {
		b.bytes -= b.sizes[b.m0]
		b.mails[b.m0] = Mail{}
		b.m0++
	}
	if b.m0 > 64 && b.m0 >= len(b.mails)/2 {
		b.mails = append([]Mail(nil), b.mails[b.m0:]...)
		b.sizes = append([]int(nil), b.sizes[b.m0:]...)
		b.m0 = 0
	}
	for _, ch := range b.subs {
		select {
		case ch <- m:
		default: // a slow subscriber re-reads the inbox from its cursor
		}
	}
}

// read returns up to limit mails with Seq > cursor.
func (b *mailbox) read(cursor int64, limit int) (InboxPage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := b.next - 1
	if cursor < 0 || cursor > last {
		return InboxPage{}, fmt.Errorf("reading the inbox at cursor %d: %w (the last mail is %d)", cursor, ErrCursorAhead, last)
	}
	pg := InboxPage{Mails: []Mail{}, Next: cursor}
	if len(b.mails) > b.m0 {
		pg.Earliest = b.mails[b.m0].Seq
	}
	if pg.Earliest > 0 && cursor+1 < pg.Earliest {
		pg.Resumed = true
		pg.Note = fmt.Sprintf("mails %d to %d were dropped (the mailbox keeps at most %d mails and %d bytes); resumed at mail %d", cursor+1, pg.Earliest-1, b.maxMails, b.maxBytes, pg.Earliest)
	}
	for i := b.m0; i < len(b.mails); i++ {
		m := b.mails[i]
		if m.Seq <= cursor {
			continue
		}
		if len(pg.Mails) == limit {
			pg.More = true
			break
		}
		pg.Mails = append(pg.Mails, m)
		pg.Next = m.Seq
	}
	return pg, nil
}

func (b *mailbox) subscribe() (<-chan Mail, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.nextSub
	b.nextSub++
	ch := make(chan Mail, 64)
	b.subs[id] = ch
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, id)
			b.mu.Unlock()
		})
	}
}

// mailSize estimates a mail's memory: its events' bytes plus a fixed cost.
func mailSize(m Mail) int {
	n := 256 + len(m.Reason)
	for _, e := range m.Events {
		n += eventSize(e)
	}
	return n
}

func eventSize(e launcher.Event) int { return 64 + len(e.Event) + len(e.Raw) + len(e.Error) }

// Digest policies (process.digest.per).
const (
	digestRound   = "round"
	digestEvents  = "events"
	digestSeconds = "seconds"
)

// digester groups a process's events into mails as the tool declares
// (process.digest, DESIGN.md §5):
//
//   - per "round" (the default): a burst of events that ends at a quiet
//     gap of Timing.RoundGap; a burst that never pauses is cut every
//     Timing.RoundMax so a chatty service still mails;
//   - per "events" n: every n events, and a partial group Timing.RoundMax
//     (10 s) after its first event, so a single rare event still reaches
//     the session while the service runs;
//   - per "seconds" n: the events of each n-second window that has any.
//
// Whatever the policy, one mail keeps at most maxEvents events and
// maxBytes of them; the rest of the digest is counted in Mail.Elided (it
// is in the output ring). Pending events are mailed when the process ends.
type digester struct {
	mu        sync.Mutex
	per       string
	n         int
	gap, most time.Duration // round: quiet gap, longest digest
	maxEvents int
	maxBytes  int
	deliver   func(events []launcher.Event, elided int)

	pending []launcher.Event
	bytes   int
	count   int       // events in the digest, elided included
	full    bool      // an event did not fit: the rest are only counted
	opened  time.Time // first event of the digest
	last    time.Time // latest event
	timer   *time.Timer
	gen     int // bumped at each flush: a stale timer does nothing
	closed  bool
}

// add counts e into the digest, keeping it while the mail has room.
func (d *digester) add(e launcher.Event) { d.count1(&e) }

// skip counts an event that was not built (wants said no).
func (d *digester) skip() { d.count1(nil) }

// wants says whether the next event would be kept.
func (d *digester) wants() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.closed && !d.full
}

func (d *digester) count1(e *launcher.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	now := time.Now()
	if d.count == 0 {
		d.opened = now
	}
	d.count++
	d.last = now
	if e != nil && !d.full {
		if size := eventSize(*e); len(d.pending) < d.maxEvents && d.bytes+size <= d.maxBytes {
			d.pending = append(d.pending, *e)
			d.bytes += size
		} else {
			d.full = true // the mail keeps the digest's first events
		}
	}
	switch d.per {
	case digestEvents:
		if d.count >= d.n {
			d.flushLocked()
		} else if d.count == 1 {
			// A partial group is mailed RoundMax after its first event, so
			// a rare event reaches the session while the service runs.
			d.arm(d.most)
		}
	case digestSeconds:
		if d.count == 1 {
			d.arm(time.Duration(d.n) * time.Second)
		}
	default:
		if now.Sub(d.opened) >= d.most {
			d.flushLocked()
		} else if d.count == 1 {
			d.arm(d.gap)
		}
	}
}

// arm starts the digest's timer for this generation.
func (d *digester) arm(after time.Duration) {
	gen := d.gen
	d.timer = time.AfterFunc(after, func() { d.fire(gen) })
}

func (d *digester) fire(gen int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if gen != d.gen || d.closed || d.count == 0 {
		return
	}
	if d.per == digestRound || d.per == "" {
		now := time.Now()
		if quiet := now.Sub(d.last); quiet < d.gap && now.Sub(d.opened) < d.most {
			// Events came since the timer was set: wait for the gap again.
			d.timer = time.AfterFunc(d.gap-quiet, func() { d.fire(gen) })
			return
		}
	}
	d.flushLocked()
}

func (d *digester) flushLocked() {
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.count == 0 {
		return
	}
	events, elided := d.pending, d.count-len(d.pending)
	d.pending, d.bytes, d.count, d.full = nil, 0, 0, false
	d.deliver(events, elided)
}

// close mails what is pending; later events are ignored.
func (d *digester) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.flushLocked()
		d.closed = true
	}
}

// closeSubscribers closes every subscription's channel (the session ended).
func (b *mailbox) closeSubscribers() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, ch := range b.subs {
		close(ch)
		delete(b.subs, id)
	}
}
