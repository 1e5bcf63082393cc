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
// naming what it waited for, when WaitBound passes first.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", WaitBound, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
