package supervisor

import (
	"bufio"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/protocol"
)

func BenchmarkRingWrite(b *testing.B) {
	r := NewRing(0)
	chunk := []byte(strings.Repeat("0123456789abcdé\n", 2048)) // 32 KiB
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		r.Write(Stdout, chunk)
	}
}

func BenchmarkRingRead(b *testing.B) {
	r := NewRing(0)
	chunk := []byte(strings.Repeat("0123456789abcdé\n", 2048))
	for i := range 64 {
		s := Stdout
		if i%5 == 0 {
			s = Stderr
		}
		r.Write(s, chunk)
	}
	earliest, head := r.Bounds()
	b.SetBytes(MaxPageBytes)
	b.ReportAllocs()
	for b.Loop() {
		c := earliest + rand.Int64N(head-earliest-MaxPageBytes)
		if _, err := r.Read(c, MaxPageBytes); err != nil {
			b.Fatal(err)
		}
	}
}

// rssBytes is the resident set size of this process.
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkServiceFlood1GiB measures the supervisor's memory while one
// service writes 1 GiB of 1 KiB jsonl events (framed, validated, digested
// into mail): the peak RSS growth over the run is reported.
func BenchmarkServiceFlood1GiB(b *testing.B) {
	const total = 1 << 30
	f := newFixture(b)
	f.AddTool(b, "flood", floodScript(total), describe("flood", protocol.ProcessService,
		&protocol.Process{Ready: readyLineAt(`^ready$`)}, nil))
	s := f.supervisor(b)
	b.SetBytes(total)
	var worstRSS, worstHeap int64
	for i := 0; b.Loop(); i++ {
		baseHeap := int64(heapNow())
		baseRSS := rssBytes()
		stop := make(chan struct{})
		peakHeap := heapPeak(stop)
		var peakRSS int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				peakRSS = max(peakRSS, rssBytes())
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		session := "bench" + strconv.Itoa(i)
		h, err := s.Start(ctxT(b), session, "flood", nil, StartOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for mustStatus(b, s, session, h.Process).Output.Head < total {
			time.Sleep(20 * time.Millisecond)
		}
		close(stop)
		<-done
		worstHeap = max(worstHeap, int64(peakHeap())-baseHeap)
		worstRSS = max(worstRSS, peakRSS-baseRSS)
		if err := s.CloseSession(ctxT(b), session); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(worstRSS)/(1<<20), "rss-growth-MiB")
	b.ReportMetric(float64(worstHeap)/(1<<20), "heap-growth-MiB")
}

// BenchmarkOutputReads32Live pages the output of 32 live processes (full
// rings, still writing) at 1000 reads per second, one read per op, and
// reports the read latency.
func BenchmarkOutputReads32Live(b *testing.B) {
	f := newFixture(b)
	f.AddTool(b, "chatter", `head -c 2000000 /dev/zero | tr '\0' 'x' | fold -w 80; echo
echo ready
while :; do echo "tick $(date +%s.%N)"; sleep 0.1; done`,
		describe("chatter", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`), Output: &protocol.Output{Framing: "lines"}}, nil))
	s := f.supervisor(b, func(c *Config) { c.Timing.StartTimeout = time.Minute })
	type target struct{ session, id string }
	var targets []target
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			session := "s" + strconv.Itoa(i%4)
			h, err := s.Start(ctxT(b), session, "chatter", nil, StartOptions{})
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			targets = append(targets, target{session, h.Process})
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(targets) != 32 {
		b.Fatalf("%d processes started", len(targets))
	}
	lat := make([]time.Duration, 0, b.N)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var bytesRead int64
	for b.Loop() {
		<-tick.C
		tg := targets[rand.IntN(len(targets))]
		st := mustStatus(b, s, tg.session, tg.id)
		c := st.Output.Earliest + rand.Int64N(st.Output.Head-st.Output.Earliest)
		begin := time.Now()
		pg, err := s.Output(tg.session, tg.id, c, MaxPageBytes)
		lat = append(lat, time.Since(begin))
		if err != nil {
			b.Fatal(err)
		}
		bytesRead += pg.Next - pg.Cursor
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(q(1), "max-µs")
	b.ReportMetric(float64(bytesRead)/float64(len(lat)), "bytes/read")
}
