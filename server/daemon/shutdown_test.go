package daemon

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// drainLogged says whether Close logged that it gave up waiting for
// requests (drainTimeout ran out).
func drainLogged(l *logBuffer) bool {
	for {
		select {
		case line := <-l.ch:
			if strings.Contains(line, "still being answered") {
				return true
			}
		default:
			return false
		}
	}
}

// dialRaw connects to the daemon's socket without sending anything.
func dialRaw(t *testing.T, d *daemon) net.Conn {
	t.Helper()
	addr, closeDir, err := wire.UnixPath(d.client.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer closeDir()
	c, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCloseHangsUpOnSilentClients: connections that never finish their
// request (a client stopped or hung mid-request, or a local process
// holding connections open) must not hold the daemon's shutdown: Close
// hangs up on them at once instead of waiting out its drain bound for
// each (SIGTERM of serve took 5 s with one such connection open).
func TestCloseHangsUpOnSilentClients(t *testing.T) {
	f := newFixture(t)
	d := f.serve(t)
	silent := []net.Conn{dialRaw(t, d), dialRaw(t, d), dialRaw(t, d)}
	if _, err := silent[0].Write([]byte(`{"op":"list"`)); err != nil { // half a request
		t.Fatal(err)
	}
	// Connections are accepted in order: once a later one is answered,
	// the silent ones are being served.
	if _, err := d.client.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	d.srv.Close()
	if drainLogged(d.logs) {
		t.Errorf("Close waited out its drain bound for connections that sent no request")
	}
	for i, c := range silent {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("silent connection %d: %v; want the daemon to hang up", i, err)
		}
	}
}

// TestCloseAnswersRequestsInFlight is the twin: a client waiting for a
// request being answered when the daemon closes (a wait on a running
// service) gets an answer, not a reset, and Close does not wait for it
// past its bound either.
func TestCloseAnswersRequestsInFlight(t *testing.T) {
	d, h := servedEcho(t)
	ctx := ctxT(t)
	// The start's connection is done with (it counts until then).
	testenv.Eventually(t, 10*time.Second, "the start's connection closed", func() bool { return d.srv.active.Load() == 0 })
	answered := make(chan error, 1)
	go func() {
		_, err := d.client.Wait(ctx, "s", h.Process, 20*time.Second)
		answered <- err
	}()
	// The wait is in flight once the daemon counts its connection
	// (before, it may still be in the listener's backlog, which closing
	// the listener resets).
	waitConns(t, d, 1)
	d.srv.Close()
	select {
	case err := <-answered:
		if err != nil && strings.HasPrefix(code(err), "not a wire error") {
			t.Errorf("the wait in flight got %v; want the daemon's answer", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the wait in flight got no answer after Close")
	}
	if drainLogged(d.logs) {
		t.Errorf("Close waited out its drain bound for a request it had cancelled")
	}
}

// waitConns waits until the daemon answers at least n connections.
func waitConns(t *testing.T, d *daemon, n int32) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "the daemon serving the request", func() bool { return d.srv.active.Load() >= n })
}

// servedEcho serves a daemon with an echo service running in session s.
func servedEcho(t *testing.T) (*daemon, supervisor.Handle) {
	t.Helper()
	f := newFixture(t)
	f.addEchoService(t, "echo")
	d := f.serve(t)
	h, err := d.client.Start(ctxT(t), wire.Request{Session: "s", Tool: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	return d, h
}
