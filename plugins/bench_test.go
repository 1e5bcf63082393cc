package plugins_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/plugins"
)

// BenchmarkRunStarted measures one Run on an already started plugin: the
// per-call cost of the gRPC contract (target: median under 0.5 ms). It
// reports the median and the 99th percentile beside the mean ns/op.
//
//	go test -run '^$' -bench RunStarted -benchtime 2000x ./plugins
func BenchmarkRunStarted(b *testing.B) {
	ctx := context.Background()
	c, err := plugins.Start(ctx, self(b), nil, []string{modeEnv + "=good"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	args := map[string]any{"text": "hello"}
	var out []byte
	collect := func(o plugins.Output) { out = append(out, o.Data...) }
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		out = out[:0]
		begun := time.Now()
		res, err := c.Run(ctx, args, collect)
		lat = append(lat, time.Since(begun))
		if err != nil || res.ExitCode != 0 || string(out) != "hello" {
			b.Fatalf("Run = %+v, %v, %q", res, err, out)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "µs-median")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs-p99")
}

// BenchmarkStreamEvents measures a call that emits 2000 events on an
// already started plugin: what the SDK's wait for each message to reach
// the socket costs a streaming tool. It reports events per second.
//
//	go test -run '^$' -bench StreamEvents -benchtime 20x ./plugins
func BenchmarkStreamEvents(b *testing.B) {
	ctx := context.Background()
	c, err := plugins.Start(ctx, self(b), nil, []string{modeEnv + "=good"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const n = 2000
	args := map[string]any{"n": n}
	got := 0
	count := func(o plugins.Output) {
		if o.Kind == plugins.Event {
			got++
		}
	}
	b.ResetTimer()
	for range b.N {
		got = 0
		res, err := c.RunCommand(ctx, "stream", args, count)
		if err != nil || res.ExitCode != 0 || got != n {
			b.Fatalf("stream = %+v, %v, %d events", res, err, got)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}
