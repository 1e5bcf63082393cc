package wire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
)

// ErrorOf gives each error the code of the first sentinel it wraps, and the
// code's error matches the sentinel again on the client's side.
func TestErrorOf(t *testing.T) {
	for _, tc := range []struct {
		err     error
		code    string
		process string
	}{
		{fmt.Errorf("x: %w", supervisor.ErrUnknownProcess), CodeUnknownProcess, ""},
		{&supervisor.LimitError{Limit: "live processes per session", Max: 8}, CodeLimit, ""},
		{&supervisor.StartError{Process: "p0a1b2c", Tool: "t", Reason: "not ready", Err: context.Canceled}, CodeNotReady, "p0a1b2c"},
		{&launcher.RefusedError{What: "tool \"x\" is not in the lock", Err: launcher.ErrUnknownName}, CodeUnknownTool, ""},
		{&launcher.RefusedError{What: "binary changed", Fix: "run `toolbox lock`"}, CodeRefused, ""},
		{&launcher.ArgError{Tool: "t", Err: errors.New("bad")}, CodeBadArgs, ""},
		{fmt.Errorf("w: %w", context.DeadlineExceeded), CodeTimeout, ""},
		{&NoDaemonError{Socket: "/s", Err: errors.New("gone")}, CodeNoDaemon, ""},
		{errors.New("something else"), CodeFailed, ""},
	} {
		e := ErrorOf(tc.err)
		if e.Code != tc.code || e.Process != tc.process || e.Message != tc.err.Error() {
			t.Errorf("ErrorOf(%v) = %+v, want code %q process %q", tc.err, e, tc.code, tc.process)
		}
	}
	if ErrorOf(nil) != nil {
		t.Error("ErrorOf(nil) is not nil")
	}
	e := &Error{Code: CodeNameInUse, Message: "name in use"}
	if !errors.Is(e, supervisor.ErrNameInUse) || errors.Is(e, supervisor.ErrBadName) {
		t.Errorf("%v: Is matches the wrong sentinels", e)
	}
}

func TestMillis(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 0, time.Microsecond: 1, 1500 * time.Millisecond: 1500, -time.Second: -1000} {
		if got := Millis(d); got != want {
			t.Errorf("Millis(%s) = %d, want %d", d, got, want)
		}
	}
}

// A socket path too long for a sockaddr_un is reached through its
// directory's descriptor.
func TestUnixPath(t *testing.T) {
	short, done, err := UnixPath("/run/x/serve.sock")
	done()
	if err != nil || short != "/run/x/serve.sock" {
		t.Errorf("short path: %q, %v", short, err)
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("x", 110))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	addr, done, err := UnixPath(SocketPath(dir))
	defer done()
	if err != nil || !strings.HasPrefix(addr, "/proc/self/fd/") || !strings.HasSuffix(addr, "/"+SocketName) {
		t.Errorf("long path: %q, %v", addr, err)
	}
	if _, _, err := UnixPath(filepath.Join(dir, strings.Repeat("y", 120))); err == nil {
		t.Error("a name too long by itself: no error")
	}
	if _, _, err := UnixPath("/no/such/dir/" + strings.Repeat("y", 120)); err == nil {
		t.Error("a long path in a missing directory: no error")
	}
}

// A state dir that does not exist means no daemon, whether its socket
// path is short enough to dial or long enough to need its directory
// opened first: both get the usual "no daemon" error and its fix.
func TestMissingStateDirIsNoDaemon(t *testing.T) {
	base := t.TempDir()
	for _, dir := range []string{
		filepath.Join(base, "missing"),
		filepath.Join(base, strings.Repeat("d", 110), "missing"),
	} {
		err := NewClient(dir).Call(context.Background(), Request{Op: OpPing}, nil)
		var nd *NoDaemonError
		if !errors.As(err, &nd) || !errors.Is(err, ErrNoDaemon) || nd.Socket != SocketPath(dir) {
			t.Errorf("state dir %d bytes long: %v, want a *NoDaemonError naming %s", len(dir), err, SocketPath(dir))
		}
	}
}
