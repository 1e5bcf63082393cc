package launcher

import (
	"runtime"

	"github.com/toolbox-dev/toolbox/protocol"
)

// Parallel validation of jsonl events (issue 13: a stream tool's events
// are to be validated at >= 250k/s, more than one core manages with the
// schema validator). The sink frames lines as before and hands small ones, in
// batches, to goroutines that build their Events (validation included);
// the results are applied in the order of the lines by the goroutine that
// writes to the sink, so that counts, invalid reports, the kept events and
// the budget come out exactly as when each line is validated where it
// ends. Nothing of that is read before finish, which waits for every
// batch. What is forwarded is written before its lines are validated, as
// it was.
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
	// memory bound) and each batch in flight under batchBytes +
	// parallelLineMax.
	parallelLineMax = 64 << 10
)

// eventBatch is lines of a stream and, once done has a value, their
// Events. Batches are reused once applied.
type eventBatch struct {
	buf    []byte // the lines, one after another
	ends   []int  // where each line ends in buf
	capped []bool // each line was cut at the line room
	events []Event
	done   chan struct{} // one value when events are ready
}

// parallelEvents is the sink's state for parallel validation.
type parallelEvents struct {
	cur      *eventBatch   // being filled; nil when empty
	inFlight []*eventBatch // dispatched, oldest first
	free     []*eventBatch // applied, to be filled again
	max      int           // most batches in flight
	workers  int
	work     chan *eventBatch // to the workers; nil until the first batch
}

// newParallelEvents returns the state for parallel validation, or nil
// where one core is all there is.
func newParallelEvents() *parallelEvents {
	n := runtime.GOMAXPROCS(0)
	if n < 2 {
		return nil
	}
	return &parallelEvents{max: 2 * n, workers: n}
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
		if n := len(p.free); n > 0 {
			p.cur, p.free = p.free[n-1], p.free[:n-1]
		} else {
			p.cur = &eventBatch{
				buf:    make([]byte, 0, batchBytes),
				ends:   make([]int, 0, batchLines),
				capped: make([]bool, 0, batchLines),
				done:   make(chan struct{}, 1),
			}
		}
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

// dispatch hands the current batch to the workers (started at the first),
// then applies the batches that are done, oldest first, waiting for the
// oldest while too many are in flight.
func (s *stdoutSink) dispatch() {
	p := s.par
	if b := p.cur; b != nil {
		if p.work == nil {
			p.work = make(chan *eventBatch, p.max+1)
			for range p.workers {
				go s.validateBatches(p.work)
			}
		}
		p.cur = nil
		p.inFlight = append(p.inFlight, b)
		p.work <- b
	}
	for len(p.inFlight) > 0 {
		if len(p.inFlight) <= p.max {
			select {
			case <-p.inFlight[0].done:
			default:
				return
			}
		} else {
			<-p.inFlight[0].done
		}
		s.applyOldest()
	}
}

// validateBatches is a worker: it builds the Events of each batch it gets
// until work is closed.
func (s *stdoutSink) validateBatches(work <-chan *eventBatch) {
	for b := range work {
		b.events = b.events[:0]
		start := 0
		for i, end := range b.ends {
			b.events = append(b.events, s.event(b.buf[start:end], b.capped[i]))
			start = end
		}
		b.done <- struct{}{}
	}
}

// applyOldest delivers the events of the oldest batch in flight, which is
// done, in order, and keeps the batch for reuse. Once the budget ends
// framing (Truncated), the rest were framed ahead of it and are dropped:
// they were never events. So is any line framed after them (endLine drops
// what comes after a drain that set Truncated).
func (s *stdoutSink) applyOldest() {
	p := s.par
	b := p.inFlight[0]
	p.inFlight[0] = nil
	p.inFlight = p.inFlight[1:]
	for _, e := range b.events {
		if s.truncated {
			break
		}
		s.count++
		s.use(e)
	}
	clear(b.events) // hold no event's bytes
	b.buf, b.ends, b.capped, b.events = b.buf[:0], b.ends[:0], b.capped[:0], b.events[:0]
	if cap(b.buf) <= 2*batchBytes { // not one grown by a long line
		p.free = append(p.free, b)
	}
}

// drain dispatches the current batch and applies every batch in flight.
func (s *stdoutSink) drain() {
	if s.par == nil {
		return
	}
	s.dispatch()
	for p := s.par; len(p.inFlight) > 0; {
		<-p.inFlight[0].done
		s.applyOldest()
	}
}

// stopWorkers applies every batch and ends the workers: the sink is done.
func (s *stdoutSink) stopWorkers() {
	if s.par == nil {
		return
	}
	s.drain()
	if s.par.work != nil {
		close(s.par.work)
		s.par.work = nil
	}
}
