package launcher

import (
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/protocol"
)

// streamTool is a v2 stream tool with runtime.timeout.idle.
func streamTool(name string, idle float64) *protocol.Describe {
	return &protocol.Describe{
		Protocol: 2, Slug: name, Description: "d", Args: []protocol.Arg{},
		Process: &protocol.Process{Mode: protocol.ProcessStream},
		Runtime: &protocol.Runtime{Timeout: &protocol.Timeout{Idle: seconds(idle), Stop: seconds(0.5)}},
	}
}

// `toolbox run` honours runtime.timeout.idle for a stream tool, as serve
// and mcp do: silent for that long, it is stopped as a timeout (124),
// the reason said, its events kept.
func TestRunStopsAStreamSilentForItsIdleTimeout(t *testing.T) {
	f := newFixture(t)
	const idle = 0.3
	f.AddTool(t, "watch", `echo '{"n":1}'; exec sleep 30`, streamTool("watch", idle))
	req := f.request("watch", nil)
	req.Timeout = 20 * time.Second // the call timeout is not what stops it
	begin := time.Now()
	res, err := Run(t.Context(), req)
	took := time.Since(begin)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != ExitTimeout || !strings.Contains(res.Reason, "runtime.timeout.idle") {
		t.Errorf("result = timed out %v, exit %d, reason %q", res.TimedOut, res.ExitCode, res.Reason)
	}
	if len(res.Events) != 1 || string(res.Events[0].Event) != `{"n":1}` {
		t.Errorf("events = %+v", res.Events)
	}
	if took < time.Duration(idle*float64(time.Second)) || took > 10*time.Second {
		t.Errorf("stopped after %s, want soon after the %gs idle timeout", took, idle)
	}
}

// Positive twin: a stream that keeps talking is not stopped, however long
// it runs past its idle timeout.
func TestRunKeepsAStreamThatTalks(t *testing.T) {
	f := newFixture(t)
	// Ten ticks 0.3 s apart: 3 s in all, past its 2 s idle timeout.
	f.AddTool(t, "ticker", `for i in 1 2 3 4 5 6 7 8 9 10; do echo "{\"n\":$i}"; sleep 0.3; done`, streamTool("ticker", 2))
	res, err := Run(t.Context(), f.request("ticker", nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.TimedOut || res.ExitCode != 0 || len(res.Events) != 10 {
		t.Errorf("result = timed out %v, exit %d, %d events", res.TimedOut, res.ExitCode, len(res.Events))
	}
}
