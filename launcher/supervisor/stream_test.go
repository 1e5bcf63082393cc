package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/protocol"
)

func (f *fixture) streamRequest(name string, keep int, on func(launcher.Event)) StreamRequest {
	return StreamRequest{
		LockPath: f.LockPath, Lock: f.Lock, Name: name, Keep: keep, OnEvent: on,
		CompileSchema: compileSchema,
	}
}

func TestRunStreamDeliversEventsAsTheyArrive(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "tests", `for i in 1 2 3; do echo "{\"test\":\"t$i\",\"ok\":true}"; sleep 0.1; done
echo 'not json'
echo '{"test":"t4","ok":"maybe"}'
echo failing >&2
exit 1`,
		describe("tests", protocol.ProcessStream, &protocol.Process{Output: &protocol.Output{Event: json.RawMessage(
			`{"type":"object","properties":{"test":{"type":"string"},"ok":{"type":"boolean"}},"required":["test","ok"]}`)}}, nil))
	var seen []launcher.Event
	var at []time.Time
	res, err := RunStream(ctxT(t), f.streamRequest("tests", 2, func(e launcher.Event) {
		seen = append(seen, e)
		at = append(at, time.Now())
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 5 || string(seen[0].Event) != `{"test":"t1","ok":true}` || !seen[3].Invalid || !seen[4].Invalid {
		t.Fatalf("events = %+v", seen)
	}
	if at[2].Sub(at[0]) < 150*time.Millisecond {
		t.Error("events were not delivered as they arrived")
	}
	if res.ExitCode != 1 || res.Count != 5 || res.Elided != 3 || len(res.Events) != 2 || res.Events[1].Raw != `{"test":"t4","ok":"maybe"}` || res.StderrTail != "failing\n" {
		t.Errorf("result = %+v", res)
	}
}

func TestRunStreamTimeoutsAndRefusals(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "silent", `echo '{"a":1}'; exec sleep 30`,
		describe("silent", protocol.ProcessStream, nil, &protocol.Runtime{Timeout: &protocol.Timeout{Idle: secs(0.3), Stop: secs(1)}}))
	f.AddTool(t, "svc", `exec sleep 30`, describe("svc", protocol.ProcessService, nil, nil))
	begin := time.Now()
	res, err := RunStream(ctxT(t), f.streamRequest("silent", 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != launcher.ExitTimeout || !strings.Contains(res.Reason, "idle") || res.Count != 1 || time.Since(begin) > 3*time.Second {
		t.Errorf("idle stream = %+v after %s", res, time.Since(begin))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	req := f.streamRequest("silent", 0, nil)
	f.Lock.Tools["silent"].Describe.Runtime.Timeout.Idle = nil
	res, err = RunStream(ctx, req)
	if err != nil || !res.Canceled || res.TimedOut {
		t.Errorf("canceled stream = %+v, %v", res, err)
	}
	if _, err := RunStream(ctxT(t), f.streamRequest("svc", 0, nil)); !errors.Is(err, ErrNotStartable) {
		t.Errorf("stream run of a service: %v", err)
	}
}
