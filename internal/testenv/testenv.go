// Package testenv decides what a test does when this machine lacks a
// kernel feature or a program it needs (bubblewrap, Landlock, root for
// run_as, a nobody user): skip, saying why, or, in CI, fail.
//
// CI sets TOOLBOX_REQUIRE_SANDBOX=1 (see .ci/run): there every "unavailable"
// becomes a failure, so a sandbox test can never pass by skipping (issue
// 10: with bwrap off PATH a broken net: none once passed the suite). A
// developer's machine without bubblewrap still runs the rest.
//
// It is imported by tests only.
package testenv

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"testing"
)

// RequireVar is the environment variable that turns skips into failures
// when set to "1".
const RequireVar = "TOOLBOX_REQUIRE_SANDBOX"

// Required reports whether RequireVar is "1": a missing feature is then a
// failure, not a skip.
func Required() bool { return os.Getenv(RequireVar) == "1" }

// Unavailable skips t with reason, or fails it when Required.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s=1 but %s", RequireVar, reason)
	}
	t.Skip(reason)
}

// Need skips (or fails, see Required) t unless ok; what names the
// feature and reason says why it is missing, e.g.
//
//	s := sandbox.Detect()
//	testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason)
//
// (testenv does not import sandbox, so that sandbox's own tests can use it.)
func Need(t testing.TB, ok bool, what, reason string) {
	t.Helper()
	if !ok {
		Unavailable(t, "%s unusable here: %s", what, reason)
	}
}

// NeedRoot skips (or fails) unless the test runs as root, which run_as and
// other users' clients need.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root (run_as switches users)")
	}
}

// Nobody returns the uid and gid of the user "nobody", skipping (or
// failing) when there is none.
func Nobody(t testing.TB) (uid, gid uint32) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		Unavailable(t, "no nobody user here: %v", err)
	}
	a, err1 := strconv.ParseUint(u.Uid, 10, 32)
	b, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("nobody has ids %q/%q", u.Uid, u.Gid)
	}
	return uint32(a), uint32(b)
}

// Condition answers a testscript condition such as [bwrap]: ok as given,
// except that when Required and the feature is missing it returns an
// error, which fails the script instead of skipping it.
func Condition(name string, ok bool, reason string) (bool, error) {
	if !ok && Required() {
		return false, fmt.Errorf("%s=1 but [%s] is unavailable: %s", RequireVar, name, reason)
	}
	return ok, nil
}
