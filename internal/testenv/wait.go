package testenv

import (
	"testing"
	"time"
)

// WaitBound is how long WaitFor waits before it fails the test: a bound
// for conditions that hold within milliseconds on an idle machine, with
// room for a loaded one.
const WaitBound = 15 * time.Second

// WaitFor polls cond every 2 ms until it holds, and fails the test,
// naming what it waited for, when WaitBound passes first: for cheap
// conditions (a counter, a channel's length).
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	poll(t, WaitBound, 2*time.Millisecond, what, cond)
}

// Eventually polls cond every 10 ms until it holds, and fails the test,
// naming what it waited for, when d passes first: for conditions that
// cost a call (a process's status, a file's contents).
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, d, 10*time.Millisecond, what, cond)
}

func poll(t testing.TB, d, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(every)
	}
}
