package supervisor

import (
	"runtime"
	"sync"
	"testing"
)

// A forced stop is SIGKILL at once, never the cancel first: the goroutine
// that wakes up at the stop request (stopCh) must already see the force
// (killCh), or it sends the cancel (a background command's SIGINT) and
// the process ends with 130 instead of 137 (seen in process_faults.txtar
// under a full run). Many rounds, each with the waiter on another
// thread, so that a waiter scheduled between two closes is caught.
func TestForcedStopIsSeenWithTheStopRequest(t *testing.T) {
	defer runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 4))
	s := &Supervisor{}
	for i := range 20000 {
		p := &proc{s: s, stopCh: make(chan struct{}), killCh: make(chan struct{})}
		var wg sync.WaitGroup
		sawKill := true
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-p.stopCh
			select {
			case <-p.killCh:
			default:
				sawKill = false
			}
		}()
		runtime.Gosched()
		p.requestStop(true)
		wg.Wait()
		if !sawKill {
			t.Fatalf("round %d: the stop request was seen before its force", i)
		}
	}
}
