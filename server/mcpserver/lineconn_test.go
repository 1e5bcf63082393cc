package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stdioServer builds the server of a lock with one tool, big, that prints
// n bytes (more than a pipe holds), for ServeIO.
func stdioServer(t *testing.T, n int) *Server {
	t.Helper()
	f := newFixture(t)
	f.AddTool(t, "big", fmt.Sprintf("yes 0123456789abcdef | head -c %d", n), v1("big"))
	sup := newSupervisor(t, f)
	srv, err := New(Options{LockPath: f.LockPath, Lock: f.Lock, Supervisor: sup, CallerEnv: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

const (
	initLine   = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n"
	inittedMsg = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
)

func bigCall(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{}}}`+"\n", id)
}

// serveStdio runs srv.ServeIO(ctx) over a pipe for stdin (the returned
// writer) and a real pipe for stdout (the returned reader), as `toolbox
// mcp` is run by a client; the channel gets ServeIO's result.
func serveStdio(t *testing.T, srv *Server, ctx context.Context) (*io.PipeWriter, *os.File, chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); outR.Close(); outW.Close() })
	done := make(chan error, 1)
	go func() { done <- srv.ServeIO(ctx, inR, outW) }()
	return inW, outR, done
}

// waitPipe waits until more than n bytes wait in the pipe r.
func waitPipe(t *testing.T, r *os.File, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatal(err)
		}
		if got > n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the answers never filled the stdout pipe (%d bytes in it)", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitServed fails the test unless ServeIO returned within d.
func waitServed(t *testing.T, done chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: ServeIO: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s: ServeIO still blocked %v later: a client that stopped reading holds the server", what, d)
	}
}

// TestStdioClientStopsReading: a client that sends calls whose answers
// fill the stdout pipe and never reads them, then closes stdin (or the
// server is told to stop, as SIGTERM does), must not hold the server: it
// returns instead of blocking forever in the write of an answer nobody
// reads. Its calls' tools are stopped either way.
func TestStdioClientStopsReading(t *testing.T) {
	for _, how := range []string{"stdin closed", "server stopped"} {
		t.Run(how, func(t *testing.T) {
			srv := stdioServer(t, 1<<20)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			in, out, done := serveStdio(t, srv, ctx)
			io.WriteString(in, initLine+inittedMsg)
			for id := 1; id <= 4; id++ {
				io.WriteString(in, bigCall(id)) // 4 MiB of answers: the pipe holds 64 KiB
			}
			// Wait until an answer (1 MiB) is being written: once part
			// of it is in the pipe (64 KiB), its write cannot end.
			waitPipe(t, out, 16<<10)
			if how == "stdin closed" {
				in.Close()
			} else {
				cancel()
			}
			waitServed(t, done, 10*time.Second, how)
		})
	}
}

// TestStdioSlowReader is the twin: a client that reads its answers late
// gets every one of them, whole and in full.
func TestStdioSlowReader(t *testing.T) {
	const n = 300000
	srv := stdioServer(t, n)
	in, out, done := serveStdio(t, srv, context.Background())
	io.WriteString(in, initLine+inittedMsg)
	for id := 1; id <= 4; id++ {
		io.WriteString(in, bigCall(id))
	}
	waitPipe(t, out, 16<<10) // the answers pile up in the pipe
	want := strings.Repeat("0123456789abcdef\n", n/17+1)[:n]
	r := bufio.NewReaderSize(out, 1<<20)
	got := map[int]bool{}
	for len(got) < 4 {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the answers: %v (got %v)", err, got)
		}
		var m struct {
			ID     *int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("answer %q: %v", line[:min(len(line), 200)], err)
		}
		if m.ID == nil || *m.ID == 0 {
			continue
		}
		if m.Result.IsError || len(m.Result.Content) == 0 || m.Result.Content[0].Text != want {
			t.Errorf("call %d: isError %v, %d content items, text of %d bytes, want %d", *m.ID, m.Result.IsError, len(m.Result.Content), len(m.Result.Content[0].Text), n)
		}
		got[*m.ID] = true
	}
	in.Close()
	waitServed(t, done, 10*time.Second, "after the last answer")
}
