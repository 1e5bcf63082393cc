package warm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// fake is an Instance that ends when closed or crashed.
type fake struct {
	n      int
	done   chan struct{}
	once   sync.Once
	closed atomic.Bool
}

func (f *fake) Done() <-chan struct{} { return f.done }

func (f *fake) Close() error {
	f.closed.Store(true)
	f.end()
	return nil
}

func (f *fake) end() { f.once.Do(func() { close(f.done) }) }

// starter starts fakes and remembers each one and when it was started.
type starter struct {
	mu    sync.Mutex
	made  []*fake
	times []time.Time
	err   error // returned instead of starting, when set
}

func (s *starter) start(ctx context.Context) (*fake, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times = append(s.times, time.Now())
	if s.err != nil {
		return nil, s.err
	}
	f := &fake{n: len(s.made) + 1, done: make(chan struct{})}
	s.made = append(s.made, f)
	return f, nil
}

func (s *starter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times)
}

func (s *starter) last() (*fake, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.made) == 0 {
		return nil, time.Time{}
	}
	return s.made[len(s.made)-1], s.times[len(s.times)-1]
}

func (s *starter) spec(limit int) Spec[*fake] {
	return Spec[*fake]{Config: "c1", Limit: limit, Start: s.start}
}

func newOwner(t *testing.T, opts Options) (*Pool[*fake], *Owner[*fake]) {
	t.Helper()
	p := New[*fake](opts)
	o, err := p.NewOwner("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, o
}

func acquire(t *testing.T, o *Owner[*fake], s Spec[*fake]) *Lease[*fake] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := o.Acquire(ctx, "tool", s)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return l
}

// crashed is an owner whose one process crashed, seen by the pool, with
// the given back-off before its restart.
func crashed(t *testing.T, backoff time.Duration) (*Owner[*fake], *starter) {
	t.Helper()
	_, o := newOwner(t, Options{MinBackoff: backoff})
	s := &starter{}
	acquire(t, o, s.spec(1)).Release()
	f, _ := s.last()
	f.end()
	testenv.WaitFor(t, "the crash to be seen", func() bool { return o.States()[0].Crashes == 1 })
	return o, s
}

func TestOneProcessServesEveryCall(t *testing.T) {
	_, o := newOwner(t, Options{})
	s := &starter{}
	for range 5 {
		l := acquire(t, o, s.spec(1))
		if l.Instance().n != 1 {
			t.Fatalf("call served by process %d, want 1", l.Instance().n)
		}
		l.Release()
	}
	if n := s.count(); n != 1 {
		t.Fatalf("%d starts for 5 calls, want 1", n)
	}
}

func TestOwnersNeverShareAProcess(t *testing.T) {
	p, a := newOwner(t, Options{})
	b, err := p.NewOwner("other")
	if err != nil {
		t.Fatal(err)
	}
	s := &starter{}
	la, lb := acquire(t, a, s.spec(4)), acquire(t, b, s.spec(4))
	if la.Instance() == lb.Instance() {
		t.Fatal("two owners were given the same process")
	}
	la.Release()
	lb.Release()
}

// The concurrency bound: never more leases at once than Limit, and calls
// beyond it wait for a slot instead of failing.
func TestLimitBoundsConcurrentCalls(t *testing.T) {
	_, o := newOwner(t, Options{})
	s := &starter{}
	const limit, calls = 3, 24
	var inflight, peak atomic.Int32
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			l := acquire(t, o, s.spec(limit))
			n := inflight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
			inflight.Add(-1)
			l.Release()
		})
	}
	wg.Wait()
	if p := peak.Load(); p != limit {
		t.Fatalf("peak of %d calls at once, want exactly the limit %d", p, limit)
	}
	if n := s.count(); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
}

// A full process makes a call wait, and the wait ends with its context.
func TestWaitForASlotEndsWithTheContext(t *testing.T) {
	_, o := newOwner(t, Options{})
	s := &starter{}
	l := acquire(t, o, s.spec(1))
	defer l.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := o.Acquire(ctx, "tool", s.spec(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a full process: %v, want the deadline", err)
	}
}

// A process that dies is started again after the back-off, without a call
// asking, and the back-off doubles with each consecutive crash: measured
// from the crash to the restart.
func TestCrashRestartsAfterBackoff(t *testing.T) {
	const minB, maxB = 40 * time.Millisecond, 160 * time.Millisecond
	_, o := newOwner(t, Options{MinBackoff: minB, MaxBackoff: maxB})
	s := &starter{}
	acquire(t, o, s.spec(1)).Release()
	want := []time.Duration{minB, 2 * minB, 4 * minB, maxB}
	for i, wait := range want {
		f, _ := s.last()
		crashed := time.Now()
		f.end()
		testenv.WaitFor(t, "the restart", func() bool { return s.count() == i+2 })
		_, at := s.last()
		took := at.Sub(crashed)
		if took < wait {
			t.Fatalf("crash %d: restarted after %s, before the back-off of %s", i+1, took, wait)
		}
		// The bound: the back-off plus scheduling slack on a loaded machine.
		if took > wait+time.Second {
			t.Fatalf("crash %d: restarted after %s, want about %s", i+1, took, wait)
		}
		t.Logf("crash %d: back-off %s, restarted after %s", i+1, wait, took.Round(time.Millisecond))
		testenv.WaitFor(t, "the restarted process in service", func() bool { return o.States()[0].Running })
	}
	st := o.States()[0]
	if st.Crashes != len(want) || st.Failures != len(want) {
		t.Fatalf("state %+v, want %d crashes in a row", st, len(want))
	}
	// A call after the restarts is served by the newest process.
	l := acquire(t, o, s.spec(1))
	defer l.Release()
	if f, _ := s.last(); l.Instance() != f {
		t.Fatalf("served by process %d, want the newest (%d)", l.Instance().n, f.n)
	}
}

// A call that arrives while a crashed process waits out its back-off waits
// for the restart and is served by it.
func TestCallDuringBackoffWaitsForTheRestart(t *testing.T) {
	o, s := crashed(t, 100*time.Millisecond)
	l := acquire(t, o, s.spec(1))
	defer l.Release()
	if l.Instance().n != 2 {
		t.Fatalf("served by process %d, want the restarted one (2)", l.Instance().n)
	}
}

// A process that ran StableAfter before it crashed starts the back-off
// over.
func TestStableProcessResetsTheBackoff(t *testing.T) {
	_, o := newOwner(t, Options{MinBackoff: 10 * time.Millisecond, StableAfter: 50 * time.Millisecond})
	s := &starter{}
	acquire(t, o, s.spec(1)).Release()
	for i := range 3 {
		f, _ := s.last()
		f.end()
		testenv.WaitFor(t, "the restart", func() bool { return s.count() == i+2 })
	}
	if st := o.States()[0]; st.Failures != 3 {
		t.Fatalf("%d failures in a row, want 3", st.Failures)
	}
	testenv.WaitFor(t, "the process in service", func() bool { return o.States()[0].Running })
	time.Sleep(60 * time.Millisecond) // the process must outlive StableAfter
	f, _ := s.last()
	f.end()
	testenv.WaitFor(t, "the restart", func() bool { return s.count() == 5 })
	if st := o.States()[0]; st.Failures != 1 {
		t.Fatalf("%d failures in a row after a stable run, want 1", st.Failures)
	}
}

// A start that fails is given to the calls that waited for it; calls
// during its back-off get it at once, saying when the next try is; after
// the back-off a call tries again.
func TestFailedStartBacksOff(t *testing.T) {
	// A back-off long enough that "at once" stays distinguishable from
	// "waited for it" on a loaded machine.
	const backoff = 2 * time.Second
	_, o := newOwner(t, Options{MinBackoff: backoff})
	s := &starter{err: errors.New("handshake failed")}
	ctx := context.Background()
	if _, err := o.Acquire(ctx, "tool", s.spec(1)); err == nil || err.Error() != "handshake failed" {
		t.Fatalf("first call: %v, want the start's error", err)
	}
	begun := time.Now()
	_, err := o.Acquire(ctx, "tool", s.spec(1))
	if err == nil || !strings.Contains(err.Error(), "handshake failed (the next start is in ") {
		t.Fatalf("call during the back-off: %v", err)
	}
	if took := time.Since(begun); took > backoff/2 {
		t.Fatalf("a call during the back-off took %s, want an answer at once", took)
	}
	if n := s.count(); n != 1 {
		t.Fatalf("%d starts, want 1 during the back-off", n)
	}
	time.Sleep(backoff) // the back-off must pass for a new attempt
	s.mu.Lock()
	s.err = nil
	s.mu.Unlock()
	l, err := o.Acquire(ctx, "tool", s.spec(1))
	if err != nil {
		t.Fatalf("call after the back-off: %v", err)
	}
	l.Release()
}

// A start refused before any process existed (Unstarted) does not back
// off: every call tries, and gets the refusal at once.
func TestUnstartedRefusalDoesNotBackOff(t *testing.T) {
	_, o := newOwner(t, Options{MinBackoff: time.Hour})
	refusal := errors.New("binary changed since the lock")
	s := &starter{err: Unstarted(refusal)}
	for i := range 3 {
		if _, err := o.Acquire(context.Background(), "tool", s.spec(1)); !errors.Is(err, refusal) {
			t.Fatalf("call %d: %v, want the refusal", i, err)
		}
	}
	if n := s.count(); n != 3 {
		t.Fatalf("%d start attempts, want one per call (3)", n)
	}
}

// A retired process gets no new call, is closed once its other calls end,
// and the next call starts a new one without back-off.
func TestRetire(t *testing.T) {
	_, o := newOwner(t, Options{MinBackoff: time.Hour})
	s := &starter{}
	a := acquire(t, o, s.spec(2))
	b := acquire(t, o, s.spec(2))
	old := a.Instance()
	a.Retire()
	if old.closed.Load() {
		t.Fatal("the retired process was closed while a call still used it")
	}
	c := acquire(t, o, s.spec(2))
	if c.Instance() == old {
		t.Fatal("a new call went to the retired process")
	}
	b.Release()
	testenv.WaitFor(t, "the retired process to close", old.closed.Load)
	c.Release()
	if st := o.States()[0]; st.Crashes != 0 || st.Failures != 0 {
		t.Fatalf("retiring counted as a failure: %+v", st)
	}
}

// A call with another Config (the lock changed) retires the running
// process and starts one of the new Config.
func TestConfigChangeRestarts(t *testing.T) {
	_, o := newOwner(t, Options{})
	s := &starter{}
	acquire(t, o, s.spec(1)).Release()
	old, _ := s.last()
	spec := s.spec(1)
	spec.Config = "c2"
	l := acquire(t, o, spec)
	defer l.Release()
	if l.Instance() == old {
		t.Fatal("the call went to the process of the old configuration")
	}
	testenv.WaitFor(t, "the old process to close", old.closed.Load)
}

// When the owner ends, every process ends (in flight, retired, or being
// started), and no call is served any more.
func TestOwnerCloseEndsEverything(t *testing.T) {
	p, o := newOwner(t, Options{})
	s := &starter{}
	busy := acquire(t, o, s.spec(2))
	retired := acquire(t, o, s.spec(2))
	retired.Retire() // busy still holds it
	// A start in progress on another tool, blocked until the owner ends.
	blocked := make(chan struct{})
	var late atomic.Pointer[fake]
	go func() {
		_, _ = o.Acquire(context.Background(), "slow", Spec[*fake]{Config: "x", Start: func(ctx context.Context) (*fake, error) {
			close(blocked)
			<-ctx.Done()
			f := &fake{done: make(chan struct{})}
			late.Store(f)
			return f, nil // started anyway: the pool must close it
		}})
	}()
	<-blocked
	ok := make(chan struct{})
	go func() { o.Close(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(10 * time.Second):
		t.Fatal("Owner.Close did not return")
	}
	for _, f := range s.made {
		if !f.closed.Load() {
			t.Fatalf("process %d survived its owner", f.n)
		}
	}
	if f := late.Load(); f == nil || !f.closed.Load() {
		t.Fatal("the process started during the close survived its owner")
	}
	if n := o.Live(); n != 0 {
		t.Fatalf("%d processes left", n)
	}
	if _, err := o.Acquire(context.Background(), "tool", s.spec(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
	busy.Release() // after the close: harmless
	o.Close()      // twice: harmless
	p.Close()
	if _, err := p.NewOwner("again"); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewOwner after Pool.Close: %v, want ErrClosed", err)
	}
}

// A restart scheduled after a crash never happens once the owner ended.
func TestNoRestartAfterClose(t *testing.T) {
	o, s := crashed(t, 20*time.Millisecond)
	o.Close()
	time.Sleep(60 * time.Millisecond) // past the back-off: a restart would have happened
	if n := s.count(); n != 1 {
		t.Fatalf("%d starts, want no restart after the owner ended", n)
	}
}

// clock is a settable Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// onDemand is an owner of an on-demand pool whose back-off is 0 after the
// first failure, then 1 s doubling, on a clock the test moves.
func onDemand(t *testing.T) (*Owner[*fake], *clock) {
	t.Helper()
	c := &clock{now: time.Now()}
	_, o := newOwner(t, Options{OnDemand: true, StableAfter: -1, Now: c.Now, Backoff: func(n int) time.Duration {
		if n <= 1 {
			return 0
		}
		return time.Second << (n - 2)
	}})
	return o, c
}

// In an on-demand pool a process that ends by itself is not restarted in
// the background: the next call finds it ended (Spec.Ended is told),
// starts a new one at once after a first failure (Spec.Restarted is told)
// and, during a longer back-off, fails at once with a *BackoffError whose
// last error is ErrEnded. A call that was served (Lease.Served) resets the
// count.
func TestOnDemandRestartsAtTheNextCall(t *testing.T) {
	o, c := onDemand(t)
	s := &starter{}
	var mu sync.Mutex
	var events []string
	spec := s.spec(1)
	spec.Ended = func(f *fake) { mu.Lock(); events = append(events, fmt.Sprintf("ended %d", f.n)); mu.Unlock() }
	spec.Restarted = func(f *fake, n int) {
		mu.Lock()
		events = append(events, fmt.Sprintf("restarted %d after %d", f.n, n))
		mu.Unlock()
	}
	crash := func() {
		t.Helper()
		f, _ := s.last()
		f.end()
		time.Sleep(20 * time.Millisecond) // time for a background restart, which must not come
		if n := s.count(); n != f.n {
			t.Fatalf("%d starts after process %d ended: restarted without a call", n, f.n)
		}
	}
	acquire(t, o, spec).Served()
	crash()
	acquire(t, o, spec).Release() // one failure: restarted at once
	crash()
	_, err := o.Acquire(context.Background(), "tool", spec)
	var be *BackoffError
	if !errors.As(err, &be) || be.Failures != 2 || !errors.Is(err, ErrEnded) || be.Wait != time.Second {
		t.Fatalf("a call during the back-off: %v, want a BackoffError of 2 failures, ErrEnded, 1s", err)
	}
	if got := err.Error(); got != "2 failures in a row (last: the process ended); the next start is in 1s" {
		t.Errorf("BackoffError says %q", got)
	}
	c.add(time.Second)
	acquire(t, o, spec).Served() // the back-off passed; served: the count starts over
	crash()
	acquire(t, o, spec).Release()
	mu.Lock()
	defer mu.Unlock()
	want := []string{"ended 1", "restarted 2 after 1", "ended 2", "restarted 3 after 2", "ended 3", "restarted 4 after 1"}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("events %q, want %q", events, want)
	}
}

// Lease.Fail takes a broken process out of service at once (its other
// calls' process is closed), counts one failure with the given error, and
// the next call starts another; failing a process the pool already saw
// end counts nothing more.
func TestLeaseFail(t *testing.T) {
	o, c := onDemand(t)
	s := &starter{}
	a := acquire(t, o, s.spec(2))
	b := acquire(t, o, s.spec(2))
	broken := errors.New("connection closed")
	a.Fail(broken)
	if f := a.Instance(); !f.closed.Load() {
		testenv.WaitFor(t, "the failed process to close", f.closed.Load)
	}
	b.Fail(errors.New("second")) // the same process: no second failure
	if st := o.States()[0]; st.Failures != 1 || st.Running {
		t.Fatalf("after Fail: %+v, want 1 failure and nothing running", st)
	}
	l := acquire(t, o, s.spec(2))
	if l.Instance() == a.Instance() {
		t.Fatal("the failed process served a call")
	}
	l.Fail(broken)
	_, err := o.Acquire(context.Background(), "tool", s.spec(2))
	var be *BackoffError
	if !errors.As(err, &be) || !errors.Is(err, broken) || be.Failures != 2 {
		t.Fatalf("during the back-off: %v, want the Fail error, 2 failures", err)
	}
	c.add(time.Second)
	acquire(t, o, s.spec(2)).Release()
}

// Refuse refuses a tool for the rest of the owner's life: its process is
// closed at once, every later call gets the refusal without starting
// anything, other tools are served, and another owner is not refused.
func TestRefuse(t *testing.T) {
	p, o := newOwner(t, Options{})
	s := &starter{}
	l := acquire(t, o, s.spec(1))
	drift := errors.New("the tools changed")
	if !o.Refuse("tool", drift) {
		t.Fatal("the first Refuse is not reported as first")
	}
	if o.Refuse("tool", errors.New("again")) {
		t.Fatal("a second Refuse is reported as first")
	}
	testenv.WaitFor(t, "the refused process to close", l.Instance().closed.Load)
	l.Release()
	for range 2 {
		if _, err := o.Acquire(context.Background(), "tool", s.spec(1)); err != drift {
			t.Fatalf("a call after the refusal: %v, want the first refusal", err)
		}
	}
	if n := s.count(); n != 1 {
		t.Fatalf("%d starts, want none after the refusal", n)
	}
	if got := o.Refusal("tool"); got != drift {
		t.Fatalf("Refusal = %v", got)
	}
	if got := o.Refusal("other"); got != nil {
		t.Fatalf("Refusal of another tool = %v", got)
	}
	other, err := o.Acquire(context.Background(), "other", s.spec(1))
	if err != nil {
		t.Fatalf("another tool after the refusal: %v", err)
	}
	other.Release()
	o2, err := p.NewOwner("second")
	if err != nil {
		t.Fatal(err)
	}
	acquire(t, o2, s.spec(1)).Release()
}

// A start in progress when its tool is refused is closed when it ends,
// and the calls that waited for it get the refusal.
func TestRefuseDuringStart(t *testing.T) {
	_, o := newOwner(t, Options{})
	release := make(chan struct{})
	begun := make(chan struct{})
	var made atomic.Pointer[fake]
	spec := Spec[*fake]{Start: func(context.Context) (*fake, error) {
		close(begun)
		<-release
		f := &fake{done: make(chan struct{})}
		made.Store(f)
		return f, nil
	}}
	got := make(chan error, 1)
	go func() {
		_, err := o.Acquire(context.Background(), "tool", spec)
		got <- err
	}()
	<-begun
	drift := errors.New("the tools changed")
	o.Refuse("tool", drift)
	close(release)
	if err := <-got; err != drift {
		t.Fatalf("the waiting call: %v, want the refusal", err)
	}
	testenv.WaitFor(t, "the process started during the refusal to close", func() bool { f := made.Load(); return f != nil && f.closed.Load() })
}
