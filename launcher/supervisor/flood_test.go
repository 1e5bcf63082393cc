package supervisor

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/protocol"
)

// floodScript writes n bytes of 1 KiB jsonl events after its ready line,
// then idles.
func floodScript(n int64) string {
	return fmt.Sprintf(`line=$(head -c 1000 /dev/zero | tr '\0' x)
echo ready
yes "{\"n\":\"$line\"}" | head -c %d
exec sleep 60`, n)
}

// heapPeak samples the Go heap in use until stop is closed and returns the
// highest value seen.
func heapPeak(stop <-chan struct{}) func() uint64 {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

func heapNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// A service flooding its output keeps memory bounded: the ring holds the
// last 1 MiB, digests and the mailbox are capped, the heap stays flat.
func TestFloodKeepsMemoryBounded(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "flood", floodScript(floodBytes), describe("flood", protocol.ProcessService,
		&protocol.Process{Ready: readyLineAt(`^ready$`)}, nil))
	s := f.supervisor(t, func(c *Config) { c.Timing.RoundMax = 200 * time.Millisecond })
	base := heapNow()
	stop := make(chan struct{})
	peak := heapPeak(stop)
	h, err := s.Start(ctxT(t), "sess", "flood", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const want = floodBytes + int64(len("ready\n"))
	testenv.Eventually(t, 120*time.Second, "the flood", func() bool { return mustStatus(t, s, "sess", h.Process).Output.Head >= want })
	close(stop)
	growth := int64(peak()) - int64(base)
	st := mustStatus(t, s, "sess", h.Process)
	p, _ := s.lookup("sess", h.Process)
	if st.Output.Head != want || st.Output.Head-st.Output.Earliest != DefaultRingBytes || len(p.ring.buf) > DefaultRingBytes {
		t.Errorf("ring = %+v (buffer %d), want the last 1 MiB of %d", st.Output, len(p.ring.buf), want)
	}
	if growth > 32<<20 {
		t.Errorf("heap grew by %d MiB during a %d MiB flood, want under 32", growth>>20, floodBytes>>20)
	}
	sess := s.sessions["sess"]
	sess.mail.mu.Lock()
	mailBytes, mails := sess.mail.bytes, len(sess.mail.mails)-sess.mail.m0
	sess.mail.mu.Unlock()
	if mailBytes > DefaultMailboxBytes || mails == 0 {
		t.Errorf("mailbox holds %d bytes in %d mails, want some and at most %d", mailBytes, mails, DefaultMailboxBytes)
	}
	t.Logf("flood of %d MiB: heap growth %.1f MiB, %d mails (%d KiB)", floodBytes>>20, float64(growth)/(1<<20), mails, mailBytes>>10)
}
