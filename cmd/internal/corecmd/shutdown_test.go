package corecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// stopGrace is the runtime.timeout.stop every tool of the shutdown
// fixture declares; each ignores SIGTERM, so it is SIGKILLed after it.
const stopGrace = 1

// stopBound is how soon after the stop the server must have exited: above
// stopGrace, below the 5 s default grace (supervisor.DefaultStopGrace) a
// lost timeout.stop would wait, with room for a loaded machine (2 s flaked at load 15 on 2 cores).
const stopBound = 4 * time.Second

// shutdownTools are the tools of the shutdown fixture, all ignoring
// SIGTERM, each with a setsid grandchild ("sleep MARKER"), each touching
// DIR/NAME.ready once running: a oneshot that sleeps, a stream that
// ticks (a go_test-like stream of events), a service.
var shutdownTools = map[string]string{
	"sleeper": `{"protocol":2,"slug":"sleeper","description":"sleeps","args":[],"process":{"output":{"framing":"chunks"}},"runtime":{"timeout":{"stop":1}}}`,
	"ticker":  `{"protocol":2,"slug":"ticker","description":"ticks","args":[],"process":{"mode":"stream","output":{"framing":"jsonl"}},"runtime":{"timeout":{"stop":1}}}`,
	"svc":     `{"protocol":2,"slug":"svc","description":"serves","args":[],"process":{"mode":"service","ready":{"kind":"immediate"}},"runtime":{"timeout":{"stop":1}}}`,
}

// shutdownFixture writes the toolbox file, the tools and the lock; it
// returns the toolbox file and the grandchildren's marker.
func shutdownFixture(t *testing.T) (hcl, marker string) {
	t.Helper()
	dir := t.TempDir()
	marker = fmt.Sprintf("4343.%d", os.Getpid()%1000)
	write := func(path, content string, mode os.FileMode) string { return writeHashed(t, path, content, mode) }
	l := manifest.New()
	l.Sandbox = "none"
	l.Builtins = []string{"process"}
	l.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	var decl strings.Builder
	decl.WriteString("sandbox = \"none\"\nbuiltin \"process\" { unconfined = true }\n")
	for name, doc := range shutdownTools {
		var d protocol.Describe
		if err := json.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("#!/bin/sh\ntrap '' TERM\nsetsid sleep %s &\ntouch %s\ni=0\nwhile :; do echo \"{\\\"n\\\":$i}\"; i=$((i+1)); sleep 0.02; done\n",
			marker, filepath.Join(dir, name+".ready"))
		l.Tools[name] = &manifest.Tool{
			Kind: "exec", Path: name, SHA256: write(filepath.Join(dir, name), script, 0o755),
			Platform: runtime.GOOS + "/" + runtime.GOARCH, Protocol: 2, Describe: &d,
			Runtime: manifest.Runtime{Mechanism: "none"},
			Probe:   manifest.Probe{Status: manifest.StatusOK},
		}
		fmt.Fprintf(&decl, "tool %q { path = %q }\n", name, name)
	}
	hcl = filepath.Join(dir, "toolbox.hcl")
	l.File = manifest.FileRef{Path: "toolbox.hcl", SHA256: write(hcl, decl.String(), 0o644)}
	l.File.Config = configDigest(t, hcl)
	if err := manifest.Write(manifest.LockPath(hcl), l); err != nil {
		t.Fatal(err)
	}
	return hcl, marker
}

// inFlight starts, over cs, the service and a background command, then a
// call of the oneshot and of the stream that it leaves running (their
// results go to the returned channel), and waits until every tool runs.
func inFlight(t *testing.T, cs *mcp.ClientSession, dir string) <-chan string {
	t.Helper()
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "svc", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("starting the service: %+v, %v", res, err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "process_run", Arguments: map[string]any{"command": "sleep " + "4344.1", "wait_seconds": 0}}); err != nil || res.IsError {
		t.Fatalf("starting a background command: %+v, %v", res, err)
	}
	results := make(chan string, 2)
	for _, name := range []string{"sleeper", "ticker"} {
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			results <- fmt.Sprintf("%s: %v %v", name, res != nil && res.IsError, err)
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, name := range []string{"sleeper", "ticker", "svc"} {
		for {
			if _, err := os.Stat(filepath.Join(dir, name+".ready")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never ran", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return results
}

// callsReturned checks that both calls left in flight by inFlight have
// returned.
func callsReturned(t *testing.T, results <-chan string) {
	t.Helper()
	for range 2 {
		select {
		case r := <-results:
			t.Logf("call in flight: %s", r)
		case <-time.After(5 * time.Second):
			t.Error("a call in flight never returned")
		}
	}
}

// leftovers lists the live processes whose command line holds one of
// the words.
func leftovers(words ...string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		for _, w := range words {
			if bytes.Contains(b, []byte(w)) {
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " "))
				break
			}
		}
	}
	return out
}

// stoppedWithin waits for done and fails unless it came within bound of
// the stop, and unless no process of the fixture is left 2 s later.
func stoppedWithin(t *testing.T, done <-chan error, stopped time.Time, bound time.Duration, words ...string) {
	t.Helper()
	select {
	case err := <-done:
		took := time.Since(stopped)
		t.Logf("exited %s after the stop (bound %s)", took.Round(time.Millisecond), bound)
		if err != nil {
			t.Errorf("exit: %v", err)
		}
		if took > bound {
			t.Errorf("exited %s after the stop, want at most %s", took.Round(time.Millisecond), bound)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("did not exit within 30 s")
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(leftovers(words...)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if l := leftovers(words...); len(l) > 0 {
		t.Errorf("processes left behind: %q", l)
	}
}

// SIGTERM to `toolbox mcp` (its context ending, as signal.NotifyContext
// does) cancels the calls in flight, a oneshot and a stream, stops the
// service and the background command with their declared cancel and
// SIGKILL after their stop grace, and exits within stopBound
// with nothing left running.
func TestMCPStopCancelsCallsInFlight(t *testing.T) {
	hcl, marker := shutdownFixture(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	g := &cli.Globals{File: hcl, StateDir: t.TempDir(), IO: cli.IOStreams{In: inR, Out: outW, Err: &lockedBuffer{}}}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- mcpRun(ctx, &MCPOptions{Globals: g}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	results := inFlight(t, cs, filepath.Dir(hcl))
	stopped := time.Now()
	stop()
	stoppedWithin(t, done, stopped, stopBound, marker, filepath.Dir(hcl), "4344.1")
	outW.Close() // the client sees the end of the connection
	callsReturned(t, results)
}

// SIGTERM to `toolbox serve` with MCP over HTTP: the HTTP calls in flight
// (which the supervisor does not own) are cancelled too, and serve exits
// within stopBound with nothing left running.
func TestServeStopCancelsMCPCallsInFlight(t *testing.T) {
	hcl, marker := shutdownFixture(t)
	g := &cli.Globals{File: hcl, StateDir: filepath.Join(t.TempDir(), "state"), IO: cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &lockedBuffer{}}}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	opts := &ServeOptions{Globals: g, MCPUnix: true, Signals: func(context.Context) (context.Context, context.CancelFunc) {
		return ctx, func() {}
	}}
	done := make(chan error, 1)
	go func() { done <- serveRun(context.Background(), opts) }()
	sock := filepath.Join(g.StateDir, MCPSocketName)
	waitMCPSocket(t, sock, done, g.IO.Err.(*lockedBuffer))
	hc := unixHTTPClient(sock)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://toolbox/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	defer once.Do(func() { cs.Close() })
	results := inFlight(t, cs, filepath.Dir(hcl))
	stopped := time.Now()
	stop()
	stoppedWithin(t, done, stopped, stopBound, marker, filepath.Dir(hcl), "4344.1")
	callsReturned(t, results)
}
