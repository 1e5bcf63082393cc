package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// deafDaemon listens on a socket, takes connections and never answers
// (what a daemon stopped by SIGSTOP does: the kernel accepts for it).
func deafDaemon(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return sock
}

// A quick request (list, status, output, tail, inbox, ping) to a daemon
// that never answers fails after QuickWait with an error naming the
// daemon's pid, where it hung for ever. The twin: a wait request is
// bounded by its context only, so it outlives QuickWait.
func TestQuickRequestToADeafDaemon(t *testing.T) {
	sock := deafDaemon(t)
	c := &Client{Socket: sock, QuickWait: 200 * time.Millisecond}
	for _, op := range []string{OpList, OpStatus, OpOutput, OpTail, OpInbox, OpPing} {
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			err = c.Call(context.Background(), Request{Op: op}, nil)
		}()
		select {
		case <-done:
		case <-time.After(testenv.WaitBound):
			t.Fatalf("%s to a daemon that never answers did not return within %s", op, testenv.WaitBound)
		}
		var ue *UnresponsiveError
		if !errors.As(err, &ue) || ue.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d)", os.Getpid())) || !strings.Contains(err.Error(), op+" request") {
			t.Errorf("%s = %v, want an UnresponsiveError naming pid %d", op, err, os.Getpid())
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := c.Call(ctx, Request{Op: OpWait}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait = %v, want its context's end, not the quick bound", err)
	}
}

// A daemon that hangs up without answering (killed -9 mid-request) is
// said to have probably died, with what to do, not as a bare EOF. The
// twin: a daemon that answers, even with a refusal, is not.
func TestDaemonHangingUpIsSaidToHaveDied(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var answer atomic.Value // string
	answer.Store("")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = c.Read(buf) // the request
			if a := answer.Load().(string); a != "" {
				_, _ = c.Write([]byte(a))
			}
			c.Close()
		}
	}()
	c := &Client{Socket: sock}
	err = c.Call(context.Background(), Request{Op: OpRunCommand}, nil)
	if err == nil || !strings.Contains(err.Error(), "hung up without answering the "+OpRunCommand+" request: it probably died") || !strings.Contains(err.Error(), "processes list") {
		t.Errorf("a daemon hanging up: %v", err)
	}

	answer.Store(`{"ok":false,"error":{"code":"failed","message":"no such tool"}}` + "\n")
	err = c.Call(context.Background(), Request{Op: OpRunCommand}, nil)
	if err == nil || strings.Contains(err.Error(), "died") || !strings.Contains(err.Error(), "no such tool") {
		t.Errorf("a daemon refusing: %v", err)
	}
}
