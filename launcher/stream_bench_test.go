package launcher

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
)

// streamBenchEvents is the stream benchmark's output (bench/fixtures.sh's
// stream_toolbox): n small jsonl events.
func streamBenchEvents(n int) []byte {
	var out []byte
	for i := 1; i <= n; i++ {
		out = fmt.Appendf(out, "{\"n\":%d,\"msg\":\"event number %d\"}\n", i, i)
	}
	return out
}

// streamBenchSchema is that benchmark's event schema.
const streamBenchSchema = `{"type":"object","required":["n","msg"],"properties":{"n":{"type":"integer"},"msg":{"type":"string"}}}`

// BenchmarkStreamEvents measures the stream path of `toolbox run` without
// any process: the stdout sink of a stream tool (kept last events,
// forwarded output, the redaction writer in front) fed 200000 events in
// the 32 KiB writes os/exec's copier makes, with the schema validator (in
// parallel where GOMAXPROCS > 1, and each event in place), with JSON
// checking only, and the validator alone. It reports events/s
// (issue 13's target for a whole run: 250k validated events/s).
func BenchmarkStreamEvents(b *testing.B) {
	const n = 200000
	data := streamBenchEvents(n)
	v, err := validate.CompileEventSchema(json.RawMessage(streamBenchSchema))
	if err != nil {
		b.Fatal(err)
	}
	lines := make([][]byte, 0, n)
	for rest := data; len(rest) > 0; {
		i := 0
		for rest[i] != '\n' {
			i++
		}
		lines = append(lines, rest[:i])
		rest = rest[i+1:]
	}
	sink := func(b *testing.B, ev EventValidator, inPlace bool) {
		for b.Loop() {
			s := newStdoutSink(protocol.FramingJSONL, io.Discard, ev)
			s.keepEvents = DefaultKeepEvents
			s.parInit = inPlace // no parallel validation
			w := (*Redactor)(nil).Writer(s)
			for p := data; len(p) > 0; {
				k := min(len(p), 32<<10)
				_, _ = w.Write(p[:k])
				p = p[k:]
			}
			_ = w.Flush()
			s.finish()
			if s.count != n || s.invalidCount != 0 {
				b.Fatalf("%d events, %d invalid", s.count, s.invalidCount)
			}
		}
	}
	report := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(n)*float64(b.N)/time.Since(start).Seconds(), "events/s")
	}
	b.Run("sink+validator", func(b *testing.B) {
		start := time.Now()
		sink(b, v, false)
		report(b, start)
	})
	b.Run("sink+validator-in-place", func(b *testing.B) {
		start := time.Now()
		sink(b, v, true)
		report(b, start)
	})
	b.Run("sink+json-only", func(b *testing.B) {
		start := time.Now()
		sink(b, nil, false)
		report(b, start)
	})
	b.Run("validator-only", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			for _, l := range lines {
				if _, err := v.Validate(l); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, start)
	})
	b.Run("decode-only", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			for _, l := range lines {
				if _, err := protocol.DecodeJSON(l); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, start)
	})
}
