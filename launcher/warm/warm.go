package warm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Instance is one running process of a pool.
type Instance interface {
	// Done is closed once the process has ended, for whatever reason.
	Done() <-chan struct{}
	// Close stops the process (gracefully first, killed after a bound of
	// its own) and returns once it has ended. It is called once per
	// instance, also after the process ended by itself.
	Close() error
}

// Spec says how an owner's process for a tool is started.
type Spec[T Instance] struct {
	// Config identifies everything the process is started with (binary and
	// its hash, sandbox, environment, working directory). An Acquire whose
	// Config differs from the running process's retires that process and
	// starts a new one.
	Config string
	// Limit is how many leases the process serves at once; less than 1
	// means 1.
	Limit int
	// Start starts a process and returns once it is ready to serve. ctx is
	// the owner's: it ends when the owner is closed. Start bounds its own
	// duration (a start timeout). An error wrapped with Unstarted means no
	// process was started (a refusal before launch).
	Start func(ctx context.Context) (T, error)
	// Ended, when set, is told of a process in service that the pool
	// found ended by itself (a failure), before it is closed; Restarted,
	// when set, of a process started after failures (how many in a row).
	// They are for the caller's logs, in its own words: they run with the
	// owner's lock held and must not call the Owner.
	Ended     func(inst T)
	Restarted func(inst T, failures int)
}

// Options tune a Pool. The zero value gives the defaults.
type Options struct {
	// MinBackoff is the wait before the first restart after a failure;
	// 0 means DefaultMinBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the wait, which doubles with each consecutive
	// failure; 0 means DefaultMaxBackoff.
	MaxBackoff time.Duration
	// StableAfter is how long a process must run for its end to count as a
	// first failure again; 0 means DefaultStableAfter, less than 0 never
	// (only Lease.Served resets the count).
	StableAfter time.Duration
	// Backoff, when set, replaces the doubling from MinBackoff to
	// MaxBackoff: it returns the wait after the n-th consecutive failure
	// (n ≥ 1); 0 means none.
	Backoff func(n int) time.Duration
	// OnDemand restarts a process only when a call asks for it: a
	// process that ends by itself is noticed by the next Acquire (or by
	// Lease.Fail), which starts a new one when the back-off allows;
	// Acquires during a back-off fail at once with a *BackoffError
	// instead of waiting. The default restarts in the background and
	// lets calls wait for the restart.
	OnDemand bool
	// Now, when set, replaces time.Now for the back-off (tests); timers
	// still wait in real time.
	Now func() time.Time
	// Logf, when set, is told of failures and restarts.
	Logf func(format string, args ...any)
}

// Defaults of Options.
const (
	DefaultMinBackoff  = 100 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
	DefaultStableAfter = time.Minute
)

// ErrClosed is returned by Acquire once the owner (or the pool) is closed.
var ErrClosed = errors.New("warm processes closed: their session has ended")

// Unstarted marks err as a start refused before any process was started
// (Spec.Start): it does not count as a failure for the back-off, so each
// Acquire tries the start again and gets the refusal at once.
func Unstarted(err error) error {
	if err == nil {
		return nil
	}
	return &unstartedError{err}
}

type unstartedError struct{ err error }

func (e *unstartedError) Error() string { return e.err.Error() }
func (e *unstartedError) Unwrap() error { return e.err }

// ErrEnded is the failure of a process that ended by itself, as a
// *BackoffError of an on-demand pool reports it (Options.OnDemand).
var ErrEnded = errors.New("the process ended")

// BackoffError is the error of an Acquire during the back-off of an
// on-demand pool (Options.OnDemand): Failures in a row, the last one's
// error (Err: its start's error, the error given to Lease.Fail, or
// ErrEnded), and Wait, the time left until the next start may happen.
type BackoffError struct {
	Failures int
	Err      error
	Wait     time.Duration
}

// Error says how many failures, the last one and the wait.
func (e *BackoffError) Error() string {
	return fmt.Sprintf("%d failures in a row (last: %v); the next start is in %s", e.Failures, e.Err, e.Wait.Round(time.Millisecond))
}

// Unwrap returns Err.
func (e *BackoffError) Unwrap() error { return e.Err }

// Pool holds the owners of warm processes. Its methods are safe for
// concurrent use.
type Pool[T Instance] struct {
	opts Options

	mu     sync.Mutex
	owners map[*Owner[T]]struct{}
	closed bool
}

// New returns an empty pool.
func New[T Instance](opts Options) *Pool[T] {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	if opts.StableAfter == 0 {
		opts.StableAfter = DefaultStableAfter
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Pool[T]{opts: opts, owners: map[*Owner[T]]struct{}{}}
}

// NewOwner returns a new owner (a session) of processes, named id in logs.
// Errors: ErrClosed once the pool is closed.
func (p *Pool[T]) NewOwner(id string) (*Owner[T], error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Owner[T]{pool: p, id: id, ctx: ctx, cancel: cancel, entries: map[string]*entry[T]{}, live: map[*proc[T]]struct{}{}, open: map[*proc[T]]struct{}{}}
	p.owners[o] = struct{}{}
	return o, nil
}

// Close closes every owner (Owner.Close) and refuses new ones.
func (p *Pool[T]) Close() {
	p.mu.Lock()
	p.closed = true
	owners := make([]*Owner[T], 0, len(p.owners))
	for o := range p.owners {
		owners = append(owners, o)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, o := range owners {
		wg.Go(o.Close)
	}
	wg.Wait()
}

func (p *Pool[T]) logf(format string, args ...any) {
	if p.opts.Logf != nil {
		p.opts.Logf(format, args...)
	}
}

// backoff is the wait after the n-th consecutive failure (n ≥ 1).
func (p *Pool[T]) backoff(n int) time.Duration {
	if p.opts.Backoff != nil {
		return max(p.opts.Backoff(n), 0)
	}
	d := p.opts.MinBackoff
	for i := 1; i < n && d < p.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.opts.MaxBackoff)
}

// Owner is one session's processes, one per tool. Its methods are safe for
// concurrent use.
type Owner[T Instance] struct {
	pool   *Pool[T]
	id     string
	ctx    context.Context // ends at Close: aborts starts in progress
	cancel context.CancelFunc
	wg     sync.WaitGroup // starts, watchers and closes in the background

	mu      sync.Mutex
	closed  bool
	entries map[string]*entry[T]
	live    map[*proc[T]]struct{} // every process not yet ended, retired ones included
	open    map[*proc[T]]struct{} // every process not yet closed (Instance.Close)
}

// entry is the state of one tool's process.
type entry[T Instance] struct {
	tool string
	spec Spec[T] // the latest, for restarts
	cur  *proc[T]

	starting bool
	gen      int   // numbers start attempts
	lastGen  int   // the last attempt that finished
	lastErr  error // its error, nil when it started a process
	cause    error // the last failure's error (Options.OnDemand)
	refused  error // Owner.Refuse: every Acquire gets it

	failures  int       // consecutive failures
	notBefore time.Time // no start before (back-off)
	timer     *time.Timer
	changed   chan struct{} // closed and replaced on every change

	starts, crashes int
}

// proc is one process and its leases.
type proc[T Instance] struct {
	inst     T
	config   string
	limit    int
	inflight int
	retired  bool // no new leases; closed when inflight reaches 0
	closing  bool // Close was called: its end is no failure
	ended    bool // its end was recorded
	begun    time.Time
}

// Lease is a call's use of a process. End it exactly once: Release,
// Served, Retire or Fail (a second call does nothing).
type Lease[T Instance] struct {
	o    *Owner[T]
	e    *entry[T]
	p    *proc[T]
	once sync.Once
}

// Instance is the leased process.
func (l *Lease[T]) Instance() T { return l.p.inst }

// Release ends the call's use of the process.
func (l *Lease[T]) Release() { l.end(false, false) }

// Served ends the call's use of the process, as Release, and records that
// the process served the call: the count of consecutive failures (the
// back-off's exponent) starts from zero again.
func (l *Lease[T]) Served() { l.end(false, true) }

// Fail ends the call's use of the process and takes it out of service
// as broken (its connection is gone): it is closed at once, whatever its
// other calls are doing, and counts as a failure, err being the failure's
// error, unless the pool had already seen it end. The next Acquire
// starts a new process when the back-off allows.
func (l *Lease[T]) Fail(err error) {
	l.once.Do(func() {
		o, e, p := l.o, l.e, l.p
		o.mu.Lock()
		defer o.mu.Unlock()
		p.inflight--
		if e.cur == p && !p.ended && !p.closing && !o.closed {
			e.cur = nil
			o.failure(e, p, err)
		}
		p.retired = true
		o.closeProc(p)
		e.broadcast()
	})
}

// Retire ends the call's use and takes the process out of service: it gets
// no new leases and is closed once its other leases end. Use it when the
// call ended in a way that may leave the process busy or broken (timed
// out, cancelled, a protocol error).
func (l *Lease[T]) Retire() { l.end(true, false) }

func (l *Lease[T]) end(retire, served bool) {
	l.once.Do(func() {
		o := l.o
		o.mu.Lock()
		defer o.mu.Unlock()
		l.p.inflight--
		if served {
			l.e.failures = 0
		}
		if retire {
			o.retire(l.e, l.p)
		} else if l.p.retired {
			o.closeIfIdle(l.p)
		}
		l.e.broadcast()
	})
}

// Acquire returns a lease on the owner's process for tool, started from
// spec when there is none (or when its Config changed). It waits, bounded
// by ctx, for a start in progress, a restart after a failure, or a free
// slot. Errors: ctx's error; ErrClosed; the error given to Owner.Refuse
// for tool; the error of the start this call waited for (Spec.Start's);
// during the back-off after a failed start, that start's error with the
// time of the next attempt; in an on-demand pool, a *BackoffError during
// any back-off.
func (o *Owner[T]) Acquire(ctx context.Context, tool string, spec Spec[T]) (*Lease[T], error) {
	if spec.Start == nil {
		return nil, errors.New("warm: a Spec without Start")
	}
	spec.Limit = max(spec.Limit, 1)
	o.mu.Lock()
	waitingOn := 0 // the start attempt this call waits for
	for {
		if o.closed {
			o.mu.Unlock()
			return nil, ErrClosed
		}
		e := o.entry(tool)
		e.spec = spec
		var wake *time.Timer
		switch p := e.cur; {
		case e.refused != nil:
			err := e.refused
			o.mu.Unlock()
			return nil, err
		case waitingOn != 0 && e.lastGen >= waitingOn && e.lastErr != nil:
			err := e.lastErr
			o.mu.Unlock()
			return nil, err
		case p != nil && p.isDone():
			o.ended(e, p) // before its watcher: never lease a dead process
			continue
		case p != nil && p.config != spec.Config:
			o.retire(e, p)
			continue
		case p != nil && p.inflight < p.limit:
			p.inflight++
			o.mu.Unlock()
			return &Lease[T]{o: o, e: e, p: p}, nil
		case p != nil:
			// Full: wait for a slot.
		case e.starting:
			waitingOn = e.gen
		default:
			if wait := e.notBefore.Sub(o.pool.opts.Now()); wait > 0 {
				if o.pool.opts.OnDemand {
					err := &BackoffError{Failures: e.failures, Err: e.cause, Wait: wait}
					o.mu.Unlock()
					return nil, err
				}
				if e.lastErr != nil && e.timer == nil {
					err := fmt.Errorf("%w (the next start is in %s)", e.lastErr, wait.Round(time.Millisecond))
					o.mu.Unlock()
					return nil, err
				}
				wake = time.NewTimer(wait)
				break
			}
			o.start(e)
			waitingOn = e.gen
		}
		ch := e.changed
		o.mu.Unlock()
		var woken <-chan time.Time
		if wake != nil {
			woken = wake.C
		}
		select {
		case <-ch:
		case <-woken:
		case <-ctx.Done():
			if wake != nil {
				wake.Stop()
			}
			return nil, ctx.Err()
		}
		if wake != nil {
			wake.Stop()
		}
		o.mu.Lock()
	}
}

// entry returns tool's entry, creating it. o.mu is held.
func (o *Owner[T]) entry(tool string) *entry[T] {
	e := o.entries[tool]
	if e == nil {
		e = &entry[T]{tool: tool, changed: make(chan struct{})}
		o.entries[tool] = e
	}
	return e
}

// broadcast wakes every Acquire waiting on e. o.mu is held.
func (e *entry[T]) broadcast() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// start starts e's process in the background from e.spec. o.mu is held.
func (o *Owner[T]) start(e *entry[T]) {
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.starting = true
	e.gen++
	e.starts++
	gen, spec := e.gen, e.spec
	o.wg.Go(func() {
		inst, err := spec.Start(o.ctx)
		o.mu.Lock()
		defer o.mu.Unlock()
		e.starting, e.lastGen, e.lastErr = false, gen, err
		defer e.broadcast()
		if err != nil {
			var unstarted *unstartedError
			if !errors.As(err, &unstarted) {
				e.failures++
				wait := o.pool.backoff(e.failures)
				e.notBefore = o.pool.opts.Now().Add(wait)
				e.cause = err
				o.pool.logf("warm %s %s: start failed (%d in a row), next try in %s: %v", o.id, e.tool, e.failures, wait, err)
			}
			return
		}
		p := &proc[T]{inst: inst, config: spec.Config, limit: spec.Limit, begun: o.pool.opts.Now()}
		o.live[p] = struct{}{}
		o.open[p] = struct{}{}
		o.wg.Go(func() { o.watch(e, p) })
		if o.closed || e.refused != nil {
			o.closeProc(p)
			return
		}
		if e.failures > 0 && spec.Restarted != nil {
			spec.Restarted(inst, e.failures)
		}
		e.cur = p
	})
}

// watch waits for p to end and, when it ended by itself while in service,
// schedules its restart after the back-off. The ended process is closed
// (releasing what its client holds) once its leases end, so that the calls
// it failed can still say how it ended. In an on-demand pool, the end of a
// process in service is left for the next Acquire to find.
func (o *Owner[T]) watch(e *entry[T], p *proc[T]) {
	<-p.inst.Done()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pool.opts.OnDemand && e.cur == p && !o.closed {
		delete(o.live, p)
		return
	}
	o.ended(e, p)
}

// ended records that p has ended (once): a failure when it was in service
// and nobody asked it to stop. o.mu is held.
func (o *Owner[T]) ended(e *entry[T], p *proc[T]) {
	if p.ended {
		return
	}
	p.ended = true
	delete(o.live, p)
	if e.cur == p {
		e.cur = nil
		if !p.closing && !o.closed {
			if e.spec.Ended != nil {
				e.spec.Ended(p.inst)
			}
			o.failure(e, p, ErrEnded)
		}
	}
	p.retired = true
	o.closeIfIdle(p)
	e.broadcast()
}

// isDone reports whether p's process has ended, without waiting.
func (p *proc[T]) isDone() bool {
	select {
	case <-p.inst.Done():
		return true
	default:
		return false
	}
}

// failure records that p, e's process in service, ended by itself or
// broke (err says how), and schedules a restart after the back-off: in
// the background, or at the next Acquire in an on-demand pool. o.mu is
// held.
func (o *Owner[T]) failure(e *entry[T], p *proc[T], err error) {
	e.crashes++
	if stable := o.pool.opts.StableAfter; stable > 0 && o.pool.opts.Now().Sub(p.begun) >= stable {
		e.failures = 0
	}
	e.failures++
	wait := o.pool.backoff(e.failures)
	e.notBefore = o.pool.opts.Now().Add(wait)
	e.lastErr = nil
	e.cause = err
	o.pool.logf("warm %s %s: the process ended (%d in a row); restarting in %s", o.id, e.tool, e.failures, wait)
	if o.pool.opts.OnDemand {
		return
	}
	e.timer = time.AfterFunc(wait, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		e.timer = nil
		if !o.closed && e.cur == nil && !e.starting {
			o.start(e)
			e.broadcast()
		}
	})
}

// retire takes p out of service and closes it once idle. o.mu is held.
func (o *Owner[T]) retire(e *entry[T], p *proc[T]) {
	p.retired = true
	if e.cur == p {
		e.cur = nil
	}
	o.closeIfIdle(p)
}

// closeIfIdle closes a retired p that serves no lease. o.mu is held.
func (o *Owner[T]) closeIfIdle(p *proc[T]) {
	if p.inflight <= 0 {
		o.closeProc(p)
	}
}

// closeProc closes p in the background, once. o.mu is held.
func (o *Owner[T]) closeProc(p *proc[T]) {
	if p.closing {
		return
	}
	p.closing = true
	delete(o.open, p)
	o.wg.Go(func() { _ = p.inst.Close() })
}

// Refuse refuses tool for the rest of the owner's life: its process in
// service is closed at once (its calls in flight fail), a start in
// progress is closed once it ends, and every later Acquire of tool gets
// err. It reports whether this was tool's first refusal (later ones keep
// the first err). It does nothing once the owner is closed.
func (o *Owner[T]) Refuse(tool string, err error) (first bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	e := o.entry(tool)
	if e.refused == nil {
		e.refused, first = err, true
	}
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if p := e.cur; p != nil {
		e.cur = nil
		p.retired = true
		o.closeProc(p)
	}
	e.broadcast()
	return first
}

// Refusal is the error tool was refused with (Refuse), nil when none.
func (o *Owner[T]) Refusal(tool string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.entries[tool]; e != nil {
		return e.refused
	}
	return nil
}

// Close closes every process of the owner, in service or retired, whatever
// it is doing (calls in flight fail), cancels starts in progress, and
// returns once every one has ended. Later Acquires get ErrClosed. Closing
// twice is safe.
func (o *Owner[T]) Close() {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		o.cancel()
		for _, e := range o.entries {
			if e.timer != nil {
				e.timer.Stop()
				e.timer = nil
			}
			e.cur = nil
			e.broadcast()
		}
		for p := range o.open {
			o.closeProc(p)
		}
	}
	o.mu.Unlock()
	o.wg.Wait()
	o.pool.mu.Lock()
	delete(o.pool.owners, o)
	o.pool.mu.Unlock()
}

// State is what an owner's process for one tool is doing (health, for
// logs and tests).
type State struct {
	Tool string
	// Running: a process is in service.
	Running bool
	// Starting: a start is in progress.
	Starting bool
	// InFlight and Limit: leases of the process in service, and its bound.
	InFlight, Limit int
	// Starts counts start attempts; Crashes the processes that ended by
	// themselves while in service.
	Starts, Crashes int
	// Failures counts consecutive failures (the back-off's exponent).
	Failures int
	// NextStart is when the back-off ends (zero when none).
	NextStart time.Time
	// LastError is the last start's error, "" when it started.
	LastError string
}

// States lists the state of each tool's process, by tool name.
func (o *Owner[T]) States() []State {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]State, 0, len(o.entries))
	for _, e := range o.entries {
		s := State{Tool: e.tool, Starting: e.starting, Starts: e.starts, Crashes: e.crashes, Failures: e.failures}
		if p := e.cur; p != nil {
			s.Running, s.InFlight, s.Limit = true, p.inflight, p.limit
		}
		if o.pool.opts.Now().Before(e.notBefore) {
			s.NextStart = e.notBefore
		}
		if e.lastErr != nil {
			s.LastError = e.lastErr.Error()
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b State) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// Live counts the owner's processes that have not ended yet, retired ones
// included.
func (o *Owner[T]) Live() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for p := range o.live {
		if !p.isDone() {
			n++
		}
	}
	return n
}
