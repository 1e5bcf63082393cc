package corecmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

func TestServeFlags(t *testing.T) {
	var got *ServeOptions
	cmd := NewCmdServe(testGlobals(), func(o *ServeOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--log-bytes", "4096", "--max-calls", "5"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.LogBytes != 4096 || got.MaxCalls != 5 {
		t.Errorf("options: %+v", got)
	}
	cmd = NewCmdServe(testGlobals(), nil)
	cmd.SetArgs([]string{"extra"})
	if err := cmd.Execute(); !errors.As(err, new(*cli.UsageError)) {
		t.Errorf("serve with an argument: %v, want a usage error", err)
	}
}

// lockedBuffer is an io.Writer safe for the daemon's concurrent logging.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveGlobals is a toolbox file declaring builtin "process" with its lock,
// and a state dir.
func serveGlobals(t *testing.T, withLock bool) (*cli.Globals, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	hcl := filepath.Join(dir, "toolbox.hcl")
	if err := os.WriteFile(hcl, []byte("sandbox = \"none\"\nbuiltin \"process\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if withLock {
		sum, err := manifest.HashFile(hcl)
		if err != nil {
			t.Fatal(err)
		}
		l := manifest.New()
		l.File = manifest.FileRef{Path: "toolbox.hcl", SHA256: sum, Config: configDigest(t, hcl)}
		l.Sandbox = "none"
		l.Builtins = []string{"process"}
		l.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
		if err := manifest.Write(manifest.LockPath(hcl), l); err != nil {
			t.Fatal(err)
		}
	}
	errb := &lockedBuffer{}
	g := &cli.Globals{File: hcl, StateDir: filepath.Join(dir, "state"), IO: cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: errb}}
	return g, errb
}

func TestServeRefusesAMissingLock(t *testing.T) {
	g, _ := serveGlobals(t, false)
	err := serveRun(context.Background(), &ServeOptions{Globals: g})
	if err == nil || !strings.Contains(err.Error(), "run `toolbox lock` first") {
		t.Fatalf("serve without a lock: %v", err)
	}
	if _, err := os.Stat(wire.SocketPath(g.StateDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a socket was created: %v", err)
	}
}

// The daemon's life: it serves until its signal, then stops what runs
// (the command ends stopped) and removes its socket.
func TestServeLifecycle(t *testing.T) {
	g, errb := serveGlobals(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := &ServeOptions{Globals: g, Signals: func(parent context.Context) (context.Context, context.CancelFunc) {
		return ctx, func() {}
	}}
	done := make(chan error, 1)
	go func() { done <- serveRun(context.Background(), opts) }()
	c := wire.NewClient(g.StateDir)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.Ping(context.Background()); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the daemon did not answer: %v (stderr %q)", err, errb.String())
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited before it answered: %v (stderr %q)", err, errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	st, err := c.RunCommand(context.Background(), wire.Request{Session: "s", WaitMS: -1, Command: &wire.Command{Cmd: "sleep 30", Name: "nap"}})
	if err != nil || st.Status != supervisor.StateRunning {
		t.Fatalf("run_command: %+v, %v", st, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit after its signal")
	}
	if _, err := os.Lstat(wire.SocketPath(g.StateDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is left: %v", err)
	}
	recs, err := supervisor.ReadRecords(g.StateDir)
	if err != nil || len(recs) != 1 || recs[0].State != supervisor.StateStopped {
		t.Errorf("records after exit: %+v, %v", recs, err)
	}
	if log := errb.String(); !strings.Contains(log, "listening on") || !strings.Contains(log, "stopping every process") {
		t.Errorf("stderr %q", log)
	}
}
