package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// Clients racing on one handle: stops, waits, status and sends all at
// once, each on its own connection. Every stop and wait answers the same
// final state; a send either lands or finds the process not running.
func TestClientsRacingOnOneHandle(t *testing.T) {
	f := newFixture(t)
	f.addEchoService(t, "echo")
	d := f.serve(t)
	ctx := ctxT(t)
	h, err := d.client.Start(ctx, wire.Request{Session: "s", Tool: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	var wg sync.WaitGroup
	finals := make(chan supervisor.Status, 3*n)
	errs := make(chan error, 5*n)
	for i := 0; i < n; i++ {
		wg.Add(4)
		go func() {
			defer wg.Done()
			st, err := wire.NewClient(d.state).Stop(ctx, "s", h.Process, false)
			if err != nil {
				errs <- err
				return
			}
			finals <- st
		}()
		go func() {
			defer wg.Done()
			st, err := wire.NewClient(d.state).Wait(ctx, "s", h.Process, 0)
			if err != nil {
				errs <- err
				return
			}
			finals <- st
		}()
		go func() {
			defer wg.Done()
			_, err := wire.NewClient(d.state).Send(ctx, "s", h.Process, json.RawMessage(`{"n":1}`))
			if err != nil && !errors.Is(err, supervisor.ErrNotRunning) {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := wire.NewClient(d.state).Status(ctx, "s", h.Process, 0); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(finals)
	close(errs)
	for err := range errs {
		t.Errorf("racing request: %v", err)
	}
	count := 0
	for st := range finals {
		count++
		if st.Status != supervisor.StateStopped || !st.Done || st.ExitCode == nil {
			t.Errorf("a racing stop or wait answered %+v", st)
		}
	}
	if count != 2*n {
		t.Errorf("%d final answers, want %d", count, 2*n)
	}
	// Two clients starting the same tool get two handles.
	a, errA := d.client.Start(ctx, wire.Request{Session: "s", Tool: "echo"})
	b, errB := d.client.Start(ctx, wire.Request{Session: "s", Tool: "echo"})
	if errA != nil || errB != nil || a.Process == b.Process {
		t.Errorf("two starts: %+v %v, %+v %v", a, errA, b, errB)
	}
}

// A named background command raced by two clients: one runs it, the other
// is refused with name_in_use while it runs.
func TestRacingOnACommandName(t *testing.T) {
	d := newFixture(t).serve(t)
	ctx := ctxT(t)
	results := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() {
			_, err := wire.NewClient(d.state).RunCommand(ctx, wire.Request{Session: "s", WaitMS: -1,
				Command: &wire.Command{Cmd: "sleep 30", Name: "build"}})
			results <- err
		}()
	}
	var ok, inUse int
	for i := 0; i < 2; i++ {
		switch err := <-results; {
		case err == nil:
			ok++
		case code(err) == wire.CodeNameInUse:
			inUse++
		default:
			t.Errorf("racing run_command: %v", err)
		}
	}
	if ok != 1 || inUse != 1 {
		t.Errorf("%d started and %d refused, want 1 and 1", ok, inUse)
	}
	st, err := d.client.Stop(context.Background(), "s", "build", true)
	if err != nil || st.Status != supervisor.StateStopped {
		t.Errorf("force stop by name: %+v, %v", st, err)
	}
}
