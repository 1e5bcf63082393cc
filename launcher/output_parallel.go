package launcher

import (
	"runtime"

	"github.com/toolbox-dev/toolbox/protocol"
)

// Parallel validation of jsonl events (issue 13: a stream tool's events
// are validated at >= 250k/s, more than one core does with the schema
// validator). The sink frames lines as before and hands small ones, in
// batches, to goroutines that build their Events (validation included);
// the results are applied in the order of the lines by the goroutine that
// writes to the sink, so that counts, invalid reports, the kept events and
// the budget come out exactly as when each line is validated where it
// ends. Nothing of that is read before finish, which waits for every
// batch. What is forwarded never waits for validation.
//
// It is used where framing does not depend on earlier events' outcome: a
// stream tool's (keepEvents) and a call that keeps nothing (streamOnly),
// whose line room is the same for every line. A call that keeps its
// events frames each line within the budget the events before it left,
// and validates each in turn as before.
//
// The EventValidator is called from several goroutines at once
// (*validate.EventValidator is safe for that).
const (
	// batchLines and batchBytes end a batch.
	batchLines = 256
	batchBytes = 32 << 10
	// parallelLineMax is the longest line validated in a batch: a longer
	// one waits for the batches before it and is validated in place, so
	// that the sink holds at most one long line at a time (DESIGN.md §5's
	// memory bound) and batches in flight at most about batchBytes each.
	parallelLineMax = 64 << 10
)

// eventBatch is lines of a stream and, once done is closed, their Events.
type eventBatch struct {
	buf    []byte // the lines, one after another
	ends   []int  // where each line ends in buf
	capped []bool // each line was cut at the line room
	events []Event
	done   chan struct{}
}

// parallelEvents is the sink's state for parallel validation.
type parallelEvents struct {
	cur      *eventBatch   // being filled; nil when empty
	inFlight []*eventBatch // dispatched, oldest first
	max      int           // most batches in flight
}

// newParallelEvents returns the state for parallel validation, or nil
// where one core is all there is.
func newParallelEvents() *parallelEvents {
	n := runtime.GOMAXPROCS(0)
	if n < 2 {
		return nil
	}
	return &parallelEvents{max: 2 * n}
}

// parallelFor says whether s validates in batches: jsonl with a schema, in
// a mode whose framing does not wait for earlier events (see above).
func (s *stdoutSink) parallelFor() bool {
	return s.framing == protocol.FramingJSONL && s.validator != nil && (s.streamOnly || s.keepEvents > 0)
}

// queue adds one line to the current batch, dispatching it when full. It
// reports false for a line too long to batch: the caller validates it in
// place, after applying every batch before it (drain).
func (s *stdoutSink) queue(line []byte, capped bool) bool {
	if len(line) > parallelLineMax {
		return false
	}
	p := s.par
	if p.cur == nil {
		p.cur = &eventBatch{done: make(chan struct{})}
	}
	b := p.cur
	b.buf = append(b.buf, line...)
	b.ends = append(b.ends, len(b.buf))
	b.capped = append(b.capped, capped)
	if len(b.ends) >= batchLines || len(b.buf) >= batchBytes {
		s.dispatch()
	}
	return true
}

// dispatch starts validating the current batch, then applies the batches
// that are done, oldest first, waiting for the oldest while too many are
// in flight.
func (s *stdoutSink) dispatch() {
	p := s.par
	if b := p.cur; b != nil {
		p.cur = nil
		p.inFlight = append(p.inFlight, b)
		go s.validateBatch(b)
	}
	for len(p.inFlight) > 0 {
		b := p.inFlight[0]
		if len(p.inFlight) <= p.max {
			select {
			case <-b.done:
			default:
				return
			}
		} else {
			<-b.done
		}
		p.inFlight[0] = nil
		p.inFlight = p.inFlight[1:]
		s.apply(b)
	}
}

// validateBatch builds the Event of each line of b.
func (s *stdoutSink) validateBatch(b *eventBatch) {
	b.events = make([]Event, len(b.ends))
	start := 0
	for i, end := range b.ends {
		b.events[i] = s.event(b.buf[start:end], b.capped[i])
		start = end
	}
	close(b.done)
}

// apply delivers the events of a done batch in order. Once the budget
// ends framing (Truncated), the rest were framed ahead of it and are
// dropped: they were never events. So is any line framed after them
// (endLine drops what comes after a drain that set Truncated).
func (s *stdoutSink) apply(b *eventBatch) {
	for _, e := range b.events {
		if s.truncated {
			break
		}
		s.count++
		s.use(e)
	}
}

// drain dispatches the current batch and applies every batch in flight.
func (s *stdoutSink) drain() {
	if s.par == nil {
		return
	}
	s.dispatch()
	p := s.par
	for len(p.inFlight) > 0 {
		b := p.inFlight[0]
		<-b.done
		p.inFlight[0] = nil
		p.inFlight = p.inFlight[1:]
		s.apply(b)
	}
}
