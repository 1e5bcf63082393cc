package supervisor

import (
	"sync"

	"github.com/toolbox-dev/toolbox/launcher"
)

// A stream tool started in the daemon (Start) is seen through its events,
// never its raw stdout (the v2 spec's D4, DESIGN.md §5): its stdout is
// framed as it declares, the last events are kept, Status shows the newest
// of them (Status.Events, within TailBytes) instead of a stdout tail, and
// its completion mail carries the last ones (Limits.MailEvents and
// Limits.MailBytes, the rest counted in Mail.Elided), as `toolbox run`
// gives a stream's result.

// eventTail keeps a process's last events, bounded by a count and a byte
// budget (at least the newest one is kept), and counts every event.
type eventTail struct {
	mu        sync.Mutex
	events    []launcher.Event // oldest first
	bytes     int
	count     int
	maxEvents int
	maxBytes  int
}

func newEventTail(maxEvents, maxBytes int) *eventTail {
	return &eventTail{maxEvents: maxEvents, maxBytes: maxBytes}
}

func (t *eventTail) add(e launcher.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count++
	t.events = append(t.events, e)
	t.bytes += eventSize(e)
	drop := 0
	for len(t.events)-drop > 1 && (len(t.events)-drop > t.maxEvents || t.bytes > t.maxBytes) {
		t.bytes -= eventSize(t.events[drop])
		drop++
	}
	if drop > 0 {
		clear(t.events[:drop])
		t.events = t.events[drop:]
	}
}

// last returns the newest events whose sizes (eventSize) fit budget (at
// least the newest one; budget ≤ 0: every event kept), oldest first, and
// the count of every event.
func (t *eventTail) last(budget int) ([]launcher.Event, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	from, used := len(t.events), 0
	for from > 0 {
		size := eventSize(t.events[from-1])
		if budget > 0 && used+size > budget && from < len(t.events) {
			break
		}
		used += size
		from--
	}
	return append([]launcher.Event(nil), t.events[from:]...), t.count
}
