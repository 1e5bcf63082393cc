package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// An agent's whole conversation over the socket: start a service, talk to
// it, page its output, read its mail, stop it (twice: idempotent), and
// close the session.
func TestRoundTrip(t *testing.T) {
	f := newFixture(t)
	f.addEchoService(t, "echo")
	d := f.serve(t)
	ctx := ctxT(t)
	c := d.client

	info, err := c.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != wire.Version || info.PID != os.Getpid() || info.Socket != d.srv.Socket() || info.Lock != manifestLock(f) {
		t.Errorf("ping = %+v", info)
	}

	h, err := c.Start(ctx, wire.Request{Session: "s1", Tool: "echo", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if h.Tool != "echo" || h.Status != supervisor.StateRunning || !strings.HasPrefix(h.Process, "p") {
		t.Fatalf("handle = %+v", h)
	}
	res, err := c.Send(ctx, "s1", h.Process, json.RawMessage(`{"n":7}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervisor.SendAnswered || len(res.Events) != 1 || string(res.Events[0].Event) != `{"got":{"n":7}}` {
		t.Errorf("send = %+v", res)
	}

	list, err := c.List(ctx, "s1")
	if err != nil || len(list) != 1 || list[0].Process != h.Process || list[0].Kind != supervisor.KindService {
		t.Errorf("list = %+v, %v", list, err)
	}
	if other, err := c.List(ctx, "s2"); err != nil || other == nil || len(other) != 0 {
		t.Errorf("list of another session = %#v, %v; want an empty list", other, err)
	}

	// Page the output three bytes at a time, following Next.
	var text strings.Builder
	for cur := int64(0); ; {
		pg, err := c.Output(ctx, "s1", h.Process, cur, 3)
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(pg.Text())
		if pg.Next == pg.Head {
			break
		}
		cur = pg.Next
	}
	if want := "starting\n{\"ready\":true}\n{\"got\":{\"n\":7}}\n"; text.String() != want {
		t.Errorf("paged output = %q, want %q", text.String(), want)
	}
	tail, err := c.Tail(ctx, "s1", h.Process, 16)
	if err != nil || tail.Text() != "{\"got\":{\"n\":7}}\n" {
		t.Errorf("tail = %q, %v", tail.Text(), err)
	}

	st, err := c.Status(ctx, "s1", h.Process, 0)
	if err != nil || st.Status != supervisor.StateRunning || st.Stdout == nil || st.Stderr == nil {
		t.Errorf("status = %+v, %v", st, err)
	}
	st, err = c.Stop(ctx, "s1", h.Process, false)
	if err != nil || st.Status != supervisor.StateStopped || !st.Done {
		t.Fatalf("stop = %+v, %v", st, err)
	}
	again, err := c.Stop(ctx, "s1", h.Process, true)
	if err != nil || again.Status != supervisor.StateStopped || *again.ExitCode != *st.ExitCode {
		t.Errorf("second stop = %+v, %v; want the same final state", again, err)
	}
	if w, err := c.Wait(ctx, "s1", h.Process, 0); err != nil || w.Status != supervisor.StateStopped {
		t.Errorf("wait on a finished process = %+v, %v", w, err)
	}

	testenv.Eventually(t, 5*time.Second, "the completion mail", func() bool {
		pg, err := c.Inbox(ctx, "s1", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pg.Mails {
			if m.Kind == supervisor.MailExit && m.Process == h.Process && m.State == supervisor.StateStopped {
				return true
			}
		}
		return false
	})
	if err := c.CloseSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := c.List(ctx, "s1"); len(list) != 0 {
		t.Errorf("after close_session, list = %+v", list)
	}
}

func manifestLock(f *fixture) string {
	lf, err := ReadLock(f.hcl())
	if err != nil {
		return err.Error()
	}
	return lf.Path
}

// Every failure comes back with its code, and the client's error matches
// the supervisor's sentinels.
func TestErrorsAreTyped(t *testing.T) {
	f := newFixture(t)
	f.addEchoService(t, "echo")
	f.addTool(t, "never", `echo booting; exec sleep 30`, protocol.ProcessService, &protocol.Process{
		Ready: &protocol.Ready{Kind: "line", Match: "^ready$"},
	}, &protocol.Runtime{Timeout: &protocol.Timeout{Start: ptr(0.3)}})
	d := f.serve(t)
	ctx := ctxT(t)
	c := d.client
	h, err := c.Start(ctx, wire.Request{Session: "s", Tool: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.RunCommand(ctx, wire.Request{Session: "s", Command: &wire.Command{Cmd: "sleep 30", Name: "job"}, WaitMS: -1})
	if err != nil || job.Name != "job" || job.Status != supervisor.StateRunning {
		t.Fatalf("run_command = %+v, %v", job, err)
	}

	cases := []struct {
		name     string
		req      wire.Request
		code     string
		sentinel error
	}{
		{"unknown op", wire.Request{Op: "dance", Session: "s"}, wire.CodeBadRequest, nil},
		{"no session", wire.Request{Op: wire.OpList}, wire.CodeBadRequest, nil},
		{"no process", wire.Request{Op: wire.OpStatus, Session: "s"}, wire.CodeBadRequest, nil},
		{"bad session", wire.Request{Op: wire.OpList, Session: "a\nb"}, wire.CodeBadSession, supervisor.ErrBadSession},
		{"unknown process", wire.Request{Op: wire.OpStatus, Session: "s", Process: "p000000"}, wire.CodeUnknownProcess, supervisor.ErrUnknownProcess},
		{"cursor beyond the head", wire.Request{Op: wire.OpOutput, Session: "s", Process: h.Process, Cursor: 1 << 40}, wire.CodeCursorAhead, supervisor.ErrCursorAhead},
		{"event against the schema", wire.Request{Op: wire.OpSend, Session: "s", Process: h.Process, Event: json.RawMessage(`{"n":"seven"}`)}, wire.CodeInvalidEvent, supervisor.ErrInvalidEvent},
		{"send to a command", wire.Request{Op: wire.OpSend, Session: "s", Process: "job", Event: json.RawMessage(`{}`)}, wire.CodeNoInput, supervisor.ErrNoInput},
		{"name running", wire.Request{Op: wire.OpRunCommand, Session: "s", Command: &wire.Command{Cmd: "true", Name: "job"}}, wire.CodeNameInUse, supervisor.ErrNameInUse},
		{"bad name", wire.Request{Op: wire.OpRunCommand, Session: "s", Command: &wire.Command{Cmd: "true", Name: "Job!"}}, wire.CodeBadName, supervisor.ErrBadName},
		{"unknown tool", wire.Request{Op: wire.OpStart, Session: "s", Tool: "nope"}, wire.CodeUnknownTool, nil},
		{"args not an object", wire.Request{Op: wire.OpStart, Session: "s", Tool: "echo", Args: json.RawMessage(`[1]`)}, wire.CodeBadArgs, nil},
		{"another lock", wire.Request{Op: wire.OpStart, Session: "s", Tool: "echo", Lock: "/elsewhere/toolbox.lock.json"}, wire.CodeWrongLock, nil},
	}
	for _, tc := range cases {
		err := c.Call(ctx, tc.req, nil)
		if code(err) != tc.code {
			t.Errorf("%s: error %v (code %q), want code %q", tc.name, err, code(err), tc.code)
			continue
		}
		if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
			t.Errorf("%s: %v does not match %v", tc.name, err, tc.sentinel)
		}
		if err.Error() == "" {
			t.Errorf("%s: empty message", tc.name)
		}
	}

	// A start that never becomes ready: not_ready, naming the process,
	// whose record stays (failed) with its output.
	_, err = c.Start(ctx, wire.Request{Session: "s", Tool: "never"})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeNotReady || we.Process == "" || !errors.Is(err, supervisor.ErrNotReady) {
		t.Fatalf("start of a service that never becomes ready: %v", err)
	}
	st, err := c.Status(ctx, "s", we.Process, 0)
	if err != nil || st.Status != supervisor.StateFailed || st.Stdout == nil || !strings.Contains(st.Stdout.Text, "booting") {
		t.Errorf("its status = %+v, %v", st, err)
	}
}

func ptr(f float64) *float64 { return &f }

// Requests that are not one JSON line are refused with bad_request; a
// request too long is refused without being read whole.
func TestMalformedRequests(t *testing.T) {
	f := newFixture(t)
	d := f.serve(t)
	for name, line := range map[string]string{
		"not JSON":  "hello\n",
		"an array":  "[1,2]\n",
		"too long":  `{"op":"list","session":"` + strings.Repeat("x", wire.MaxRequestBytes) + "\"}\n",
		"no answer": "",
	} {
		conn, err := net.Dial("unix", d.srv.Socket())
		if err != nil {
			t.Fatal(err)
		}
		go conn.Write([]byte(line))
		if line == "" {
			conn.(*net.UnixConn).CloseWrite()
		}
		conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		got, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if line == "" {
			if got != "" {
				t.Errorf("%s: answered %q to an empty request", name, got)
			}
			continue
		}
		var resp wire.Response
		if err := json.Unmarshal([]byte(got), &resp); err != nil || resp.OK || resp.Error == nil || resp.Error.Code != wire.CodeBadRequest {
			t.Errorf("%s: response %q", name, got)
		}
	}
}

// A workspace in a request is the client's, made absolute: a relative one
// is refused with bad_request (the daemon would resolve it against its own
// directory), for a start and a background command alike; an absolute one
// is used.
func TestRelativeWorkspaceRefused(t *testing.T) {
	f := newFixture(t)
	f.addEchoService(t, "echo")
	d := f.serve(t)
	ctx := ctxT(t)
	if _, err := d.client.Start(ctx, wire.Request{Session: "s", Tool: "echo", Workspace: "proj", WorkspaceFrom: "--workspace"}); code(err) != wire.CodeBadRequest || !strings.Contains(err.Error(), `"proj"`) {
		t.Errorf("start on a relative workspace: %v, want bad_request naming it", err)
	}
	if _, err := d.client.RunCommand(ctx, wire.Request{Session: "s", Workspace: "proj", Command: &wire.Command{Cmd: "true"}}); code(err) != wire.CodeBadRequest {
		t.Errorf("a command on a relative workspace: %v, want bad_request", err)
	}
	if _, err := d.client.Start(ctx, wire.Request{Session: "s", Tool: "echo", Workspace: t.TempDir(), WorkspaceFrom: "--workspace"}); err != nil {
		t.Errorf("start on an absolute workspace: %v", err)
	}
}

// A client that hangs up cancels its request: a start waiting for a ready
// line that never comes is killed at once rather than at its timeout.
func TestHangUpCancelsTheRequest(t *testing.T) {
	f := newFixture(t)
	f.addTool(t, "slow", `exec sleep 60`, protocol.ProcessService, &protocol.Process{
		Ready: &protocol.Ready{Kind: "line", Match: "^ready$"},
	}, &protocol.Runtime{Timeout: &protocol.Timeout{Start: ptr(60)}})
	d := f.serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	if _, err := d.client.Start(ctx, wire.Request{Session: "s", Tool: "slow"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("start with a client deadline: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, "the abandoned start to end", func() bool {
		l, err := d.client.List(ctxT(t), "s")
		return err == nil && len(l) == 1 && l[0].Done
	})
	if time.Since(begin) > 20*time.Second {
		t.Errorf("the start was not cancelled by the hang-up")
	}
}

// `toolbox lock` while the daemon runs: the next start uses the new lock.
func TestLockReloaded(t *testing.T) {
	f := newFixture(t)
	f.addEchoService(t, "echo")
	d := f.serve(t)
	ctx := ctxT(t)
	if _, err := d.client.Start(ctx, wire.Request{Session: "s", Tool: "echo2"}); code(err) != wire.CodeUnknownTool {
		t.Fatalf("a tool not locked yet: %v", err)
	}
	f.addEchoService(t, "echo2")
	f.writeLock(t)
	if _, err := d.client.Start(ctx, wire.Request{Session: "s", Tool: "echo2"}); err != nil {
		t.Fatalf("after the lock was rewritten: %v", err)
	}
	// A lock that cannot be read leaves the last good one in use.
	locktest.WriteFile(t, filepath.Join(f.Dir, "toolbox.lock.json"), "{broken", 0o644)
	if _, err := d.client.Start(ctx, wire.Request{Session: "s", Tool: "echo2"}); err != nil {
		t.Fatalf("with a broken lock file: %v", err)
	}
}
