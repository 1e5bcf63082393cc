package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultProgressInterval is how often a long wait reports that it is
// still waiting (Options.ProgressInterval), well under the 60 s after
// which clients commonly give up on a call (NOTES.md).
const DefaultProgressInterval = 5 * time.Second

// reporter sends the progress notifications of one call. It does nothing
// when the client gave no progress token. Progress counts the
// notifications sent, so it increases with each one, as the spec asks.
type reporter struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	every time.Duration

	mu sync.Mutex
	n  float64
}

func newReporter(ctx context.Context, req *mcp.CallToolRequest, every time.Duration) *reporter {
	r := &reporter{ctx: ctx, ss: req.Session, every: every}
	if req.Params != nil {
		r.token = req.Params.GetProgressToken()
	}
	return r
}

// enabled says the client asked for progress.
func (r *reporter) enabled() bool { return r != nil && r.token != nil && r.ss != nil }

// send sends one progress notification with message. Errors (a client
// that went away) are ignored: progress is advisory.
func (r *reporter) send(message string) {
	if !r.enabled() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	_ = r.ss.NotifyProgress(r.ctx, &mcp.ProgressNotificationParams{ProgressToken: r.token, Progress: r.n, Message: message})
}

// heartbeat sends "<what>: still waiting after Ns" every r.every until
// the returned stop is called (stop waits for the last send to finish).
func (r *reporter) heartbeat(what string) (stop func()) {
	if !r.enabled() || r.every <= 0 {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(r.every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-r.ctx.Done():
				return
			case <-t.C:
				r.send(fmt.Sprintf("%s: still waiting after %s", what, time.Since(start).Round(time.Second)))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit); wg.Wait() })
	}
}

// queue sends messages in order from one goroutine, so that a producer
// that must not block (a stream tool's event callback) never waits for
// the client. When maxQueued messages are pending, later ones are dropped
// and counted; the next message sent says how many were.
type queue struct {
	r       *reporter
	ch      chan string
	mu      sync.Mutex
	dropped int
	done    chan struct{}
}

const maxQueued = 1024

func (r *reporter) queue() *queue {
	q := &queue{r: r, ch: make(chan string, maxQueued), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		for m := range q.ch {
			q.mu.Lock()
			if q.dropped > 0 {
				m = fmt.Sprintf("(%d progress messages dropped) %s", q.dropped, m)
				q.dropped = 0
			}
			q.mu.Unlock()
			r.send(m)
		}
	}()
	return q
}

// push queues m, or drops it when the queue is full.
func (q *queue) push(m string) {
	if !q.r.enabled() {
		return
	}
	select {
	case q.ch <- m:
	default:
		q.mu.Lock()
		q.dropped++
		q.mu.Unlock()
	}
}

// close sends what is queued and stops.
func (q *queue) close() {
	close(q.ch)
	<-q.done
}
