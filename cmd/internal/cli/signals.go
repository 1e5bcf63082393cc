package cli

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// StopSignals end a run the way a timeout does: the tool gets its
// declared cancel (its process group), then SIGKILL after its
// runtime.timeout.stop, and `toolbox run` exits 128+N (130 for SIGINT,
// 143 for SIGTERM, 129 for SIGHUP), like a shell's child killed by N.
var StopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// notifyStop returns a context that is canceled at the first of
// StopSignals, and a function that stops listening and reports which one
// arrived (0 for none). Later signals are swallowed until then: the stop
// in progress is already bounded by the tool's stop grace.
func notifyStop(parent context.Context) (context.Context, func() syscall.Signal) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, StopSignals...)
	var got atomic.Int32
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				if n, ok := s.(syscall.Signal); ok && got.CompareAndSwap(0, int32(n)) {
					cancel()
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() syscall.Signal {
		signal.Stop(ch)
		close(done)
		cancel()
		return syscall.Signal(got.Load())
	}
}
