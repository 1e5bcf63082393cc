package supervisor

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// A send's answer holds only the events the service produced after the
// send (issue 11 #19). Events reach the supervisor late: a line the
// service wrote before the send may still sit in its stdout pipe, or in
// the copier's hands, when the send is written, and would pass for an
// answer. So the stdout pipe of a service that reads events is the
// supervisor's own (not os/exec's): it knows how many bytes its copier has
// read and, with FIONREAD, how many still wait in the pipe. Their sum,
// taken as the send begins, is the stdout position the service had
// reached; the framer gives every event the position where its line ends,
// and the answer keeps only events that end past the send's position.
// The rest are still mailed as the digest says.

// drainGrace bounds how long a run's stdout is read after the run exited
// and every byte it wrote before its exit was read: output that leftover
// descendants (a setsid grandchild that keeps the pipe) write later is cut
// then, as sandbox.Process does for os/exec's copiers.
const drainGrace = 500 * time.Millisecond

// ownedStdout is the stdout pipe of one run and its copier.
type ownedStdout struct {
	r, w *os.File
	read atomic.Int64  // bytes the copier has read
	done chan struct{} // closed when the copier returned
}

func newOwnedStdout() (*ownedStdout, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	return &ownedStdout{r: r, w: w, done: make(chan struct{})}, nil
}

// delivered is closed once the run has exited and its stdout events are
// all delivered: with an owned stdout pipe, when its copier has returned
// (the process's exit alone says nothing of what still waits in the
// pipe); else when the process is done (os/exec's copiers are then done).
func (in *instance) delivered() <-chan struct{} {
	if in.out != nil {
		return in.out.done
	}
	return in.sp.Done()
}

// abandon closes both ends of a pipe whose run never started.
func (o *ownedStdout) abandon() {
	o.r.Close()
	o.w.Close()
}

// start closes the parent's write end (the child has its own) and copies
// the pipe into dst until EOF or drain cuts it.
func (o *ownedStdout) start(dst io.Writer) {
	o.w.Close()
	go func() {
		defer close(o.done)
		defer o.r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := o.r.Read(buf)
			if n > 0 {
				o.read.Add(int64(n))
				_, _ = dst.Write(buf[:n]) // outWriter never fails
			}
			if err != nil {
				return
			}
		}
	}()
}

// produced is how many bytes the run has written to stdout so far: those
// read plus those still in the pipe (the two read consistently: retried
// while the copier moves in between; without FIONREAD, those read).
func (o *ownedStdout) produced() int64 {
	for range 8 {
		before := o.read.Load()
		queued, err := pipeQueued(o.r)
		if err != nil {
			break
		}
		if o.read.Load() == before {
			return before + queued
		}
	}
	return o.read.Load()
}

// drain waits, once the run has exited, until every byte it wrote before
// its exit has been read, then for EOF at most drainGrace, and stops the
// copier. It returns whether output was cut (leftover descendants still
// held the pipe).
func (o *ownedStdout) drain() bool {
	target := o.produced()
	t := time.NewTimer(drainGrace)
	defer t.Stop()
	for {
		select {
		case <-o.done:
			return false
		case <-t.C:
			if o.read.Load() < target {
				t.Reset(drainGrace) // still delivering what the run wrote
				continue
			}
			_ = o.r.SetReadDeadline(time.Now())
			<-o.done
			return true
		}
	}
}
