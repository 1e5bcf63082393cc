package launcher

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/toolbox-dev/toolbox/protocol"
)

// runtime.timeout.idle for `toolbox run` (issue 11 #18): a stream tool
// that writes nothing, to stdout or stderr, for that long is stopped as a
// timeout (its declared cancel, then SIGKILL after runtime.timeout.stop):
// exit code ExitTimeout, Result.Reason saying so, as `toolbox serve` and
// `toolbox mcp` stop it. A oneshot is bounded by its call timeout alone,
// and a plugin's stream by its call timeout (its output comes over gRPC).

// idleFor is a stream tool's runtime.timeout.idle, 0 for none (and for
// every other mode).
func idleFor(d *protocol.Describe) time.Duration {
	if d.Mode() != protocol.ProcessStream || d.Runtime == nil || d.Runtime.Timeout == nil {
		return 0
	}
	if idle := d.Runtime.Timeout.Idle; idle != nil && *idle > 0 {
		return time.Duration(min(*idle, float64(400*24*time.Hour/time.Second)) * float64(time.Second))
	}
	return 0
}

// lastOutput is when a run last wrote anything, in Unix nanoseconds.
type lastOutput struct{ at atomic.Int64 }

func newLastOutput() *lastOutput {
	l := &lastOutput{}
	l.at.Store(time.Now().UnixNano())
	return l
}

// stamp returns w, noting the time of every write.
func (l *lastOutput) stamp(w io.Writer) io.Writer {
	return stampWriter{l: l, w: w}
}

// quiet is how long the run has written nothing.
func (l *lastOutput) quiet() time.Duration {
	return time.Since(time.Unix(0, l.at.Load()))
}

type stampWriter struct {
	l *lastOutput
	w io.Writer
}

func (s stampWriter) Write(p []byte) (int, error) {
	s.l.at.Store(time.Now().UnixNano())
	return s.w.Write(p)
}

// idleReason is Result.Reason of a run stopped for its silence.
func idleReason(idle time.Duration) string {
	return fmt.Sprintf("no output for %s (runtime.timeout.idle)", idle)
}
