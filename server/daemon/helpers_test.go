package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/sandbox"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// clientEnv makes this test binary a one-shot client: it pings the socket
// named by the variable and prints the error code (or "ok").
const clientEnv = "DAEMON_TEST_CLIENT_SOCKET"

func TestMain(m *testing.M) {
	sandbox.Init()
	if sock := os.Getenv(clientEnv); sock != "" {
		_, err := (&wire.Client{Socket: sock}).Ping(context.Background())
		if err != nil {
			fmt.Println(wire.ErrorOf(err).Code)
			fmt.Fprintln(os.Stderr, err)
		} else {
			fmt.Println("ok")
		}
		os.Exit(0)
	}
	os.Exit(testenv.RunWithTmp(m))
}

// fixture is a locktest.Fixture (mechanism none, builtin "process"
// declared) whose lock the daemon reads from disk (writeLock).
type fixture struct{ *locktest.Fixture }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{locktest.New(t, "sandbox = \"none\"\nbuiltin \"process\" {}\n", "process")}
}

// hcl is the toolbox file's path.
func (f *fixture) hcl() string { return filepath.Join(f.Dir, "toolbox.hcl") }

// addTool writes script as tools/NAME and locks it as a v2 tool of mode
// with process p and runtime rt.
func (f *fixture) addTool(t *testing.T, name, script, mode string, p *protocol.Process, rt *protocol.Runtime) {
	t.Helper()
	if p == nil {
		p = &protocol.Process{}
	}
	p.Mode = mode
	f.AddTool(t, name, script, &protocol.Describe{Protocol: 2, Slug: name, Description: "test tool", Args: []protocol.Arg{}, Process: p, Runtime: rt})
}

// writeLock writes the lock beside the toolbox file.
func (f *fixture) writeLock(t *testing.T) {
	t.Helper()
	if err := manifest.Write(f.LockPath, f.Lock); err != nil {
		t.Fatal(err)
	}
}

// echoService is a service that answers each input line with an event
// holding it, after a ready line.
const echoService = `echo starting; echo '{"ready":true}'; while read -r l; do echo "{\"got\":$l}"; done`

func (f *fixture) addEchoService(t *testing.T, name string) {
	t.Helper()
	f.addTool(t, name, echoService, protocol.ProcessService, &protocol.Process{
		Ready: &protocol.Ready{Kind: "line", Match: `"ready"`},
		Input: &protocol.Input{Framing: "jsonl", Event: json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`)},
	}, nil)
}

// daemon is a served daemon and a client of it.
type daemon struct {
	srv    *Server
	sup    *supervisor.Supervisor
	client *wire.Client
	state  string
	logs   *logBuffer
}

// logBuffer collects Logf lines (safe for concurrent use).
type logBuffer struct {
	ch chan string
}

func (l *logBuffer) logf(format string, args ...any) {
	select {
	case l.ch <- fmt.Sprintf(format, args...):
	default:
	}
}

// serve writes the fixture's lock and serves it from a new state dir
// until the test ends.
func (f *fixture) serve(t *testing.T) *daemon {
	t.Helper()
	f.writeLock(t)
	return serveAt(t, f.hcl(), filepath.Join(t.TempDir(), "state"))
}

// serveAt serves the lock of hcl from state; mods change the server
// before it serves.
func serveAt(t *testing.T, hcl, state string, mods ...func(*Server)) *daemon {
	t.Helper()
	lf, err := ReadLock(hcl)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{ch: make(chan string, 1000)}
	srv, err := Listen(Options{StateDir: state, Lock: lf, Logf: logs.logf})
	if err != nil {
		t.Fatal(err)
	}
	sup, err := supervisor.New(supervisor.Config{
		StateDir: state, Lock: lf.Lock, LockPath: lf.Path, CallerEnv: os.Environ(),
		CompileSchema: func(raw json.RawMessage) (supervisor.EventValidator, error) {
			return validate.CompileEventSchema(raw)
		},
		Timing: supervisor.Timing{StartTimeout: 5 * time.Second, StopGrace: 2 * time.Second, SendQuiet: 150 * time.Millisecond, RoundGap: 100 * time.Millisecond},
	})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	for _, m := range mods {
		m(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, sup) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer ccancel()
		if err := sup.Close(cctx); err != nil {
			t.Errorf("closing the supervisor: %v", err)
		}
		srv.Close()
	})
	return &daemon{srv: srv, sup: sup, client: wire.NewClient(state), state: state, logs: logs}
}

// code is the wire code of err ("" for nil).
func code(err error) string {
	if err == nil {
		return ""
	}
	var we *wire.Error
	if !errors.As(err, &we) {
		return "not a wire error: " + err.Error()
	}
	return we.Code
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
