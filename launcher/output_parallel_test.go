package launcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
)

// sinkMode is how a test sink keeps events: a stream tool's last events or
// nothing (a streamed call), the two modes that validate in parallel.
type sinkMode struct {
	name       string
	keepEvents int
	streamOnly bool
	limit      int
}

var parallelModes = []sinkMode{
	{"stream tool", DefaultKeepEvents, false, MaxResultBytes},
	{"stream tool keeping 3", 3, false, MaxResultBytes},
	{"stream tool small budget", DefaultKeepEvents, false, 1000},
	{"stream tool 200k budget", 7, false, 200 << 10},
	{"streamed call", 0, true, MaxResultBytes},
	{"streamed call small budget", 0, true, 1000},
}

func parallelTestValidator(t testing.TB) EventValidator {
	v, err := validate.CompileEventSchema(json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// runSink writes out to a sink in mode in the given chunks, validating in
// parallel or each line in place, and returns the finished sink.
func runSink(t *testing.T, v EventValidator, m sinkMode, out []byte, chunks []int, parallel bool) *stdoutSink {
	t.Helper()
	var fwd strings.Builder
	s := newStdoutSink(protocol.FramingJSONL, &fwd, v)
	s.keepEvents, s.streamOnly, s.limit = m.keepEvents, m.streamOnly, m.limit
	s.parInit = true
	if parallel {
		// Batches in flight whatever GOMAXPROCS is.
		s.par = &parallelEvents{max: 3, workers: 2}
	}
	p := out
	for _, k := range chunks {
		k = min(k, len(p))
		s.Write(p[:k])
		p = p[k:]
	}
	s.Write(p)
	s.finish()
	if fwd.String() != string(out) {
		t.Fatalf("forwarded %d bytes differ from the %d written", fwd.Len(), len(out))
	}
	if parallel && (len(s.par.inFlight) != 0 || s.par.cur != nil || s.par.work != nil) {
		t.Fatalf("finish left batches or workers behind")
	}
	return s
}

// sameSink fails t unless two finished sinks hold the same result.
func sameSink(t *testing.T, got, want *stdoutSink) {
	t.Helper()
	type result struct {
		Count, InvalidCount, Elided, Kept int
		Truncated                         bool
		Events                            []Event
		Costs                             []int
		Invalid                           []InvalidEvent
	}
	r := func(s *stdoutSink) result {
		return result{s.count, s.invalidCount, s.elided, s.kept, s.truncated, s.events, s.costs, s.invalid}
	}
	if g, w := r(got), r(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("validated in parallel:\n%+v\nin place:\n%+v", summary(g.Count, g.InvalidCount, g.Elided, g.Truncated, len(g.Events)), summary(w.Count, w.InvalidCount, w.Elided, w.Truncated, len(w.Events)))
	}
}

func summary(count, invalid, elided int, truncated bool, kept int) string {
	return fmt.Sprintf("count %d invalid %d elided %d truncated %v kept %d", count, invalid, elided, truncated, kept)
}

// mixedStream is n lines drawn by r: valid events, events that fail the
// schema or are not JSON, blank lines, lines long enough to be capped by
// a 1000-byte budget, costly invalid lines (quotes count double) and, when
// long is set, lines longer than parallelLineMax; the last line may lack
// its newline.
func mixedStream(r *rand.Rand, n int, long bool) []byte {
	var b []byte
	for i := range n {
		switch k := r.IntN(100); {
		case k < 70:
			b = fmt.Appendf(b, `{"n":%d,"msg":"event %d"}`, i, i)
		case k < 78:
			b = fmt.Appendf(b, `{"n":"%d"}`, i)
		case k < 84:
			b = fmt.Appendf(b, `{"n":%d`, i)
		case k < 90:
			b = append(b, " \t\r"[:r.IntN(4)]...)
		case k < 94:
			b = fmt.Appendf(b, `{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 900+r.IntN(300)))
		case k < 98:
			b = fmt.Appendf(b, `{"n":"%s"}`, strings.Repeat(`\"`, 300+r.IntN(200)))
		default:
			if long {
				b = fmt.Appendf(b, `{"n":%d,"pad":"%s"}`, i, strings.Repeat("y", parallelLineMax+r.IntN(1000)-500))
			} else {
				b = fmt.Appendf(b, `{"n":%d.5}`, i)
			}
		}
		if i < n-1 || r.IntN(2) == 0 {
			b = append(b, '\n')
		}
	}
	return b
}

// TestParallelValidationIsExact: for streams of every kind of line, in
// writes of every size, a sink that validates in batches on other
// goroutines ends exactly as one that validates each line where it ends:
// the same count, invalid reports (numbered in order), kept events in
// order, budget spent and cut, and the same bytes passed on.
func TestParallelValidationIsExact(t *testing.T) {
	v := parallelTestValidator(t)
	for _, m := range parallelModes {
		t.Run(m.name, func(t *testing.T) {
			for seed := range uint64(6) {
				r := rand.New(rand.NewPCG(seed, 13))
				out := mixedStream(r, 3000, seed%2 == 1)
				var chunks []int
				for range 200 {
					chunks = append(chunks, 1+r.IntN([]int{7, 600, 32 << 10, 200 << 10}[r.IntN(4)]))
				}
				want := runSink(t, v, m, out, chunks, false)
				got := runSink(t, v, m, out, chunks, true)
				sameSink(t, got, want)
			}
		})
	}
}

// TestParallelValidationKeepsOrder: a stream tool keeping every event gets
// them in the order written, each the bytes of its line.
func TestParallelValidationKeepsOrder(t *testing.T) {
	const n = 5000
	s := runSink(t, parallelTestValidator(t), sinkMode{"all", n, false, MaxResultBytes}, streamBenchEvents(n), []int{100, 32 << 10, 5, 32 << 10}, true)
	if len(s.events) != n || s.count != n || s.invalidCount != 0 {
		t.Fatalf("%d events kept of %d counted", len(s.events), s.count)
	}
	for i, e := range s.events {
		if want := fmt.Sprintf(`{"n":%d,"msg":"event number %d"}`, i+1, i+1); string(e.Event) != want || e.Invalid {
			t.Fatalf("event %d = %s, want %s", i, e.Event, want)
		}
	}
}

// TestParallelValidationReportsInvalidInOrder: invalid events in the
// middle of batches are reported with their numbers, first ones first.
func TestParallelValidationReportsInvalidInOrder(t *testing.T) {
	var out []byte
	bad := map[int]bool{}
	for i := 1; i <= 3000; i++ {
		if i%29 == 0 {
			bad[i] = true
			out = fmt.Appendf(out, "{\"n\":\"%d\"}\n", i)
			continue
		}
		out = fmt.Appendf(out, "{\"n\":%d}\n", i)
	}
	s := runSink(t, parallelTestValidator(t), sinkMode{"streamed", 0, true, MaxResultBytes}, out, []int{4096, 4096, 4096}, true)
	if s.invalidCount != len(bad) || len(s.invalid) != MaxInvalidReports {
		t.Fatalf("%d invalid, %d reported; want %d and %d", s.invalidCount, len(s.invalid), len(bad), MaxInvalidReports)
	}
	for i, inv := range s.invalid {
		if inv.N != 29*(i+1) || !strings.Contains(inv.Error, "want integer, got string") {
			t.Fatalf("report %d = %+v, want event %d", i, inv, 29*(i+1))
		}
	}
}

// TestParallelValidationBudgetCut: an invalid event that alone costs more
// than the budget, in the middle of a batch, ends framing there as it did
// before: nothing after it is counted or kept, though all of it is
// passed on.
func TestParallelValidationBudgetCut(t *testing.T) {
	var out []byte
	for i := 1; i <= 1000; i++ {
		if i == 700 {
			out = fmt.Appendf(out, "{\"n\":\"%s\"}\n", strings.Repeat(`\"`, 400))
			continue
		}
		out = fmt.Appendf(out, "{\"n\":%d}\n", i)
	}
	m := sinkMode{"stream tool", 5, false, 1000}
	s := runSink(t, parallelTestValidator(t), m, out, []int{len(out)}, true)
	if !s.truncated || s.count != 700 || len(s.events) != 5 || string(s.events[4].Event) != `{"n":699}` || s.elided != 695 {
		t.Fatalf("%s, last kept %s; want the cut at event 700", summary(s.count, s.invalidCount, s.elided, s.truncated, len(s.events)), s.events[len(s.events)-1].Event)
	}
	sameSink(t, s, runSink(t, parallelTestValidator(t), m, out, []int{len(out)}, false))
}

// TestParallelValidationUsed: a stream tool's and a streamed call's sink
// validate in parallel where there is more than one core; a call that
// keeps its events, or checks JSON only, does not.
func TestParallelValidationUsed(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // not skipped on one core
	v := parallelTestValidator(t)
	for _, c := range []struct {
		keep   int
		stream bool
		v      EventValidator
		want   bool
	}{{DefaultKeepEvents, false, v, true}, {0, true, v, true}, {0, false, v, false}, {DefaultKeepEvents, false, nil, false}} {
		s := newStdoutSink(protocol.FramingJSONL, nil, c.v)
		s.keepEvents, s.streamOnly = c.keep, c.stream
		s.Write([]byte("{\"n\":1}\n"))
		s.finish()
		if (s.par != nil) != c.want || s.count != 1 {
			t.Errorf("keep %d, streamOnly %v, validator %v: parallel %v, want %v", c.keep, c.stream, c.v != nil, s.par != nil, c.want)
		}
	}
}

// FuzzParallelValidation: for any output, written in any chunks, in every
// mode that validates in parallel, the result is that of validating each
// line in place.
func FuzzParallelValidation(f *testing.F) {
	f.Add([]byte("{\"n\":1}\n{\"n\":\"x\"}\n\n{\n{\"n\":2}"), []byte{3, 9, 1})
	f.Add(mixedStream(rand.New(rand.NewPCG(1, 2)), 400, false), []byte{200, 17, 255})
	f.Add([]byte(strings.Repeat("{\"n\":\""+strings.Repeat(`\"`, 300)+"\"}\n", 40)), []byte{0})
	v := parallelTestValidator(f)
	f.Fuzz(func(t *testing.T, out, sizes []byte) {
		var chunks []int
		for _, c := range sizes {
			chunks = append(chunks, 1+int(c)*int(c))
		}
		for _, m := range parallelModes {
			sameSink(t, runSink(t, v, m, out, chunks, true), runSink(t, v, m, out, chunks, false))
		}
	})
}

// validatorsRunning says whether any parallel validation worker is alive.
func validatorsRunning() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*stdoutSink).validateBatches")
}

// awaitValidators polls, for 5s at most, until validatorsRunning says
// want; what names the moment in a failure.
func awaitValidators(t *testing.T, want bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); validatorsRunning() != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: validation workers running = %v after 5s, want %v", what, !want, want)
		}
	}
}

// TestParallelValidatorsEndWhenStartFails: a run that wrote a stream's
// worth of events and then reports it never started (a plugin that fails
// its handshake after writing) leaves no validation worker behind; its
// positive twin, a run that started, ends them too.
func TestParallelValidatorsEndWhenStartFails(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	awaitValidators(t, false, "before the test")
	lines := []byte(strings.Repeat("{\"n\":1}\n", 2*batchLines))
	for _, started := range []bool{false, true} {
		o := execOptions{framing: protocol.FramingJSONL, validator: parallelTestValidator(t), keepEvents: DefaultKeepEvents, stdout: io.Discard, stderr: io.Discard}
		_, _ = collect("tool", o, func(stdout, _ io.Writer) (outcome, error) {
			stdout.Write(lines)
			awaitValidators(t, true, "the stream written")
			return outcome{started: started}, errors.New("no handshake")
		})
		awaitValidators(t, false, fmt.Sprintf("the run over (started %v)", started))
	}
}
