package sandbox

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// drainGrace is how long the output pipes may stay open once the child has
// exited and its leftovers were killed. It only matters when a process
// outside the child's tree (one the tool handed its stdout to) still holds
// a pipe: everything the child wrote is delivered whatever the grace; what
// such a holder writes after the grace is cut, and Process.OutputCut says
// so.
const drainGrace = 500 * time.Millisecond

// outPipe copies one output stream of the child (stdout or stderr) from a
// pipe toolbox owns to the caller's Writer. os/exec's own copier is not
// used: with exec.Cmd.WaitDelay it drops the bytes still in the pipe when
// the delay fires, which under CPU load lost whole results (NOTES.md,
// "Measured in the second round").
//
// The rule it keeps: every byte written before the child exited is
// delivered. Once the child has exited (and its process tree was killed),
// the copy goes on to end of file, which normally comes at once; when it
// has not come within drainGrace, the bytes then in the pipe are read
// (FIONREAD: they include everything written before the exit, which was
// in the pipe or already read) and the copy stops there, marking the
// output cut.
type outPipe struct {
	r    *os.File
	dst  io.Writer
	done chan struct{}
	cut  atomic.Bool
	// werr is the first error of dst; the pipe is still read to its end
	// (a tool must never block because its reader went away).
	werr error
}

// newOutPipe returns a pipe for one output stream: w is the child's end.
func newOutPipe(dst io.Writer) (p *outPipe, w *os.File, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &outPipe{r: r, dst: dst, done: make(chan struct{})}, w, nil
}

// copy runs on its own goroutine from the start until the pipe is done.
func (o *outPipe) copy() {
	defer close(o.done)
	defer o.r.Close()
	buf := make([]byte, 64<<10)
	limit := int64(-1) // >= 0 once the grace expired: read this many bytes in all
	var n int64
	for {
		want := buf
		if limit >= 0 {
			if n >= limit {
				o.cut.Store(!o.atEOF())
				return
			}
			want = buf[:min(int64(len(buf)), limit-n)]
		}
		k, err := o.r.Read(want)
		if k > 0 {
			n += int64(k)
			o.write(buf[:k])
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded) && limit < 0:
			// The child has exited: nothing it wrote can still be on
			// its way, so what is in the pipe now is the rest of it.
			limit = n + int64(pending(o.r))
			// Those bytes are there: reading them cannot block, the
			// deadline only guards against the impossible.
			_ = o.r.SetReadDeadline(time.Now().Add(time.Second))
		default: // end of file, or a deadline while reading what was pending
			o.cut.Store(!errors.Is(err, io.EOF))
			return
		}
	}
}

// atEOF reports whether the pipe is at end of file right now, without
// waiting: a holder that let go meanwhile does not count as a cut. A byte
// found instead is delivered (it came after the exit). The read is made
// on the descriptor itself (non-blocking, as every os.Pipe): a Read
// past the deadline would not even look.
func (o *outPipe) atEOF() bool {
	rc, err := o.r.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	k, eof := 0, false
	_ = rc.Control(func(fd uintptr) {
		n, err := unix.Read(int(fd), b[:])
		k, eof = max(n, 0), n == 0 && err == nil
	})
	if k > 0 {
		o.write(b[:k])
	}
	return eof
}

// write hands p to the caller's Writer until it fails once.
func (o *outPipe) write(p []byte) {
	if o.werr == nil {
		_, o.werr = o.dst.Write(p)
	}
}

// exited starts the grace: the child has exited and its tree was killed.
func (o *outPipe) exited() { _ = o.r.SetReadDeadline(time.Now().Add(drainGrace)) }

// pending is the number of bytes waiting in the pipe (FIONREAD, which
// Linux names TIOCINQ), 0 when
// it cannot be read.
func pending(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
		if err == nil {
			n = v
		}
	})
	return n
}

// CopyOutput copies r, the read end of a child's output pipe, to dst with
// the rule Start keeps for a Command's output, for callers that start the
// child themselves (Cmd): everything up to end of file, and once exited is
// closed (the child has exited and its tree was killed), at most
// drainGrace more of waiting, after which the bytes then in the pipe are
// read and the copy ends; cut reports that ending (see
// Process.OutputCut). It closes r and returns when the copy is over. A
// dst that fails is no longer written to; r is still read to its end.
func CopyOutput(r *os.File, dst io.Writer, exited <-chan struct{}) (cut bool) {
	o := &outPipe{r: r, dst: dst, done: make(chan struct{})}
	go func() {
		select {
		case <-exited:
			o.exited()
		case <-o.done:
		}
	}()
	o.copy()
	return o.cut.Load()
}
