package plugins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/plugins"
)

// self is the test binary, started as a fake plugin.
func self(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// startFake starts the fake plugin mode and closes it when the test ends,
// checking that its process group is gone by then.
func startFake(t testing.TB, mode string) *plugins.Client {
	t.Helper()
	c, err := plugins.Start(context.Background(), self(t), nil, []string{modeEnv + "=" + mode})
	if err != nil {
		t.Fatalf("Start(%s): %v", mode, err)
	}
	t.Cleanup(func() { closeAndCheck(t, c) })
	return c
}

// closeAndCheck closes c and fails unless no live process remains in its
// process group and the plugin itself has been reaped.
func closeAndCheck(t testing.TB, c *plugins.Client) {
	t.Helper()
	pgid := c.Pid()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Errorf("Close returned before the plugin was reaped")
	}
	waitGroupGone(t, pgid)
	if _, err := os.Stat("/proc/" + strconv.Itoa(pgid)); err == nil {
		t.Errorf("plugin %d still in the process table after Close (zombie)", pgid)
	}
}

// waitGroupGone waits up to 5 s for process group pgid to have no member
// that is alive (orphans are reaped by init, not by us).
func waitGroupGone(t testing.TB, pgid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		live := groupMembers(pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process group %d still has live members %v", pgid, live)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the processes of group pgid that are not zombies.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split
		// after its closing parenthesis.
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			live = append(live, pid)
		}
	}
	return live
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// collect gathers a call's output.
type collect struct {
	chunks []byte
	events []string
}

func (c *collect) add(o plugins.Output) {
	switch o.Kind {
	case plugins.Chunk:
		c.chunks = append(c.chunks, o.Data...)
	case plugins.Event:
		c.events = append(c.events, string(o.Data))
	}
}

func TestDescribeCheckRun(t *testing.T) {
	c := startFake(t, "good")
	ctx := ctxT(t)
	if got := c.ProtocolVersion(); got != plugins.ProtocolVersion {
		t.Errorf("ProtocolVersion() = %d, want %d", got, plugins.ProtocolVersion)
	}

	d, raw, err := c.Describe(ctx)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if d.Slug != "fake" || d.Protocol != 2 || len(d.Commands) != 9 {
		t.Errorf("Describe = slug %q protocol %d, %d commands", d.Slug, d.Protocol, len(d.Commands))
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc["slug"] != "fake" {
		t.Errorf("raw describe %s: %v", raw, err)
	}

	cr, err := c.Check(ctx)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if cr.OK || cr.Detail != "frob not found" || cr.Fix != "install frob" {
		t.Errorf("Check = %+v", cr)
	}

	var out collect
	res, err := c.Run(ctx, map[string]any{"text": "hello"}, out.add)
	if err != nil || res != (plugins.Result{}) || string(out.chunks) != "hello" {
		t.Errorf("Run = %+v, %v, output %q", res, err, out.chunks)
	}

	out = collect{}
	res, err = c.RunCommand(ctx, "stream", map[string]any{"n": json.Number("4")}, out.add)
	want := []string{`{"i":0}`, `{"i":1}`, `{"i":2}`, `{"i":3}`}
	if err != nil || res.ExitCode != 0 || strings.Join(out.events, " ") != strings.Join(want, " ") {
		t.Errorf("stream = %+v, %v, events %q", res, err, out.events)
	}

	res, err = c.RunCommand(ctx, "fail", nil, nil)
	if err != nil || res != (plugins.Result{ExitCode: 4, Error: "frob failed"}) {
		t.Errorf("fail = %+v, %v", res, err)
	}
}

func TestRunRefusesBadArguments(t *testing.T) {
	c := startFake(t, "good")
	for _, args := range []map[string]any{
		{},                    // text is required
		{"text": "x", "y": 1}, // unknown
		{"text": map[string]any{}},
	} {
		_, err := c.Run(ctxT(t), args, nil)
		if !errors.Is(err, plugins.ErrArguments) {
			t.Errorf("Run(%v) = %v, want ErrArguments", args, err)
		}
	}
	if _, err := c.RunCommand(ctxT(t), "nope", nil, nil); !errors.Is(err, plugins.ErrArguments) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown command: %v", err)
	}
}

// The plugin gets only the environment it was given, plus go-plugin's
// PLUGIN_UNIX_SOCKET_DIR: a directory short enough that the socket
// go-plugin binds in it ("plugin" and up to 10 digits) fits a unix socket
// path (107 bytes and a NUL), whatever TMPDIR's length.
func TestEnvironmentIsOnlyWhatWasGiven(t *testing.T) {
	t.Setenv("TOOLBOX_HOST_SECRET", "leak")
	// Searchable by all, as /tmp: else SocketBase passes it over.
	root := testenv.OpenDir(t, "e")
	for _, n := range []int{0, plugins.MaxSocketBase, plugins.MaxSocketBase + 1, 150} {
		tmp := os.TempDir()
		if n > 0 {
			if pad := n - len(root) - 1; pad < 1 {
				t.Logf("TMPDIR of %d bytes: %s is already too long", n, root)
				continue
			}
			tmp = filepath.Join(root, strings.Repeat("t", n-len(root)-1))
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TMPDIR", tmp)
		}
		socketDir := pluginEnvironment(t)
		const socket = len("/plugin") + 10
		if socketDir == "" || len(socketDir)+socket > 107 {
			t.Errorf("TMPDIR of %d bytes: PLUGIN_UNIX_SOCKET_DIR = %q, %d bytes: its socket would not fit 107 bytes", len(tmp), socketDir, len(socketDir))
		}
		if want := len(tmp) <= plugins.MaxSocketBase; strings.HasPrefix(socketDir, tmp+"/") != want {
			t.Errorf("TMPDIR of %d bytes: PLUGIN_UNIX_SOCKET_DIR = %q; under TMPDIR: %v, want %v", len(tmp), socketDir, !want, want)
		}
	}
}

// pluginEnvironment starts a plugin, checks the environment it sees and
// returns its PLUGIN_UNIX_SOCKET_DIR, which must be gone once it is closed.
func pluginEnvironment(t *testing.T) string {
	t.Helper()
	c, err := plugins.Start(ctxT(t), self(t), nil, []string{modeEnv + "=good", "GIVEN=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out collect
	if _, err := c.RunCommand(ctxT(t), "env", nil, out.add); err != nil {
		t.Fatal(err)
	}
	var env []string
	if err := json.Unmarshal(out.chunks, &env); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "TOOLBOX_HOST_SECRET") || !strings.Contains(joined, "GIVEN=1") {
		t.Errorf("plugin environment:\n%s", joined)
	}
	var socketDir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PLUGIN_UNIX_SOCKET_DIR="); ok {
			socketDir = v
		}
	}
	closeAndCheck(t, c)
	if _, err := os.Stat(socketDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory %s left behind: %v", socketDir, err)
	}
	return socketDir
}

// A SocketDir too long for the socket path is refused before anything
// starts, with the limit and the fix; one of the longest length allowed
// works.
func TestLongSocketDir(t *testing.T) {
	root := testenv.OpenDir(t, "s")
	if len(root)+2 > plugins.MaxSocketBase {
		t.Skipf("%s is too long to make a socket dir of %d bytes under it", root, plugins.MaxSocketBase)
	}
	longest := filepath.Join(root, strings.Repeat("s", plugins.MaxSocketBase-len(root)-1))
	if err := os.Mkdir(longest, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := plugins.Options{SocketDir: longest}.Start(ctxT(t), self(t), nil, []string{modeEnv + "=good"})
	if err != nil {
		t.Fatalf("SocketDir of %d bytes: %v", len(longest), err)
	}
	closeAndCheck(t, c)
	over := longest + "s"
	_, err = plugins.Options{SocketDir: over}.Start(ctxT(t), self(t), nil, []string{modeEnv + "=good"})
	if err == nil || !strings.Contains(err.Error(), over) || !strings.Contains(err.Error(), "107 bytes") || !strings.Contains(err.Error(), fmt.Sprintf("at most %d bytes", plugins.MaxSocketBase)) {
		t.Errorf("SocketDir of %d bytes: %v, want a refusal naming it, the limit and the fix", len(over), err)
	}
}

func TestPanicInRunIsRecovered(t *testing.T) {
	c := startFake(t, "good")
	res, err := c.RunCommand(ctxT(t), "panic", nil, nil)
	if err != nil || res.ExitCode != 2 || res.Error != "panic: boom" {
		t.Errorf("panic = %+v, %v; want exit 2, \"panic: boom\"", res, err)
	}
	// The plugin survives and still serves.
	res, err = c.Run(ctxT(t), map[string]any{"text": "after"}, nil)
	if err != nil || res.ExitCode != 0 {
		t.Errorf("Run after a panic = %+v, %v", res, err)
	}
}

func TestPanicKillingThePlugin(t *testing.T) {
	c := startFake(t, "good")
	_, err := c.RunCommand(ctxT(t), "gopanic", nil, nil)
	if !errors.Is(err, plugins.ErrPluginExited) {
		t.Fatalf("gopanic: %v, want ErrPluginExited", err)
	}
	for _, want := range []string{"exit status 2", "panic: boom in a goroutine"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestExitMidStream(t *testing.T) {
	c := startFake(t, "good")
	var out collect
	_, err := c.RunCommand(ctxT(t), "crash", nil, out.add)
	if !errors.Is(err, plugins.ErrPluginExited) {
		t.Fatalf("crash: %v, want ErrPluginExited", err)
	}
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "giving up") {
		t.Errorf("error %q should say exit status 3 and quote stderr", err)
	}
	if len(out.events) != 2 {
		t.Errorf("events before the crash = %q, want 2", out.events)
	}
	// Calls after the crash fail the same way, at once.
	if _, _, err := c.Describe(ctxT(t)); !errors.Is(err, plugins.ErrPluginExited) {
		t.Errorf("Describe after the crash: %v", err)
	}
}

// TestEmitThenExitLosesNothing: what a plugin wrote and emitted before it
// called os.Exit reaches the host, every byte and the event, on every try
// (the SDK's sends used to return before gRPC had written them, and the
// exit threw the rest away).
func TestEmitThenExitLosesNothing(t *testing.T) {
	for i := range 20 {
		c := startFake(t, "good")
		var out collect
		_, err := c.RunCommand(ctxT(t), "emit-exit", nil, out.add)
		if !errors.Is(err, plugins.ErrPluginExited) {
			t.Fatalf("try %d: emit-exit: %v, want ErrPluginExited", i, err)
		}
		if len(out.chunks) != emitExitBytes || len(out.events) != 1 {
			t.Fatalf("try %d: got %d bytes and events %q before the exit, want %d bytes and the event", i, len(out.chunks), out.events, emitExitBytes)
		}
	}
}

func TestCancelRun(t *testing.T) {
	c := startFake(t, "good")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.RunCommand(ctx, "block", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("block: %v, want DeadlineExceeded", err)
	}
}

func TestCloseKillsTheWholeGroup(t *testing.T) {
	c := startFake(t, "good") // the cleanup checks the group is gone
	var out collect
	if _, err := c.RunCommand(ctxT(t), "spawn", nil, out.add); err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(string(out.chunks))
	if err != nil {
		t.Fatalf("spawn printed %q", out.chunks)
	}
	pgid, err := syscall.Getpgid(grandchild)
	if err != nil || pgid != c.Pid() {
		t.Fatalf("grandchild %d in group %d (%v), want the plugin's %d", grandchild, pgid, err, c.Pid())
	}
}

func TestCloseAStoppedPlugin(t *testing.T) {
	c := startFake(t, "good")
	if err := syscall.Kill(c.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	closeAndCheck(t, c)
	if d := time.Since(begun); d > 10*time.Second {
		t.Errorf("Close of a stopped plugin took %s", d)
	}
}

func TestKillWhileRunning(t *testing.T) {
	c, err := plugins.Start(ctxT(t), self(t), nil, []string{modeEnv + "=good"})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.RunCommand(context.Background(), "block", nil, nil)
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	pgid := c.Pid()
	c.Kill()
	if err := <-errc; err == nil {
		t.Errorf("Run survived Kill")
	}
	waitGroupGone(t, pgid)
	closeAndCheck(t, c) // Close after Kill is a no-op
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		mode    string
		want    error
		mention []string
	}{
		{"stdout-first", plugins.ErrStdoutBeforeHandshake, []string{`"starting up\n"`}},
		{"junk", plugins.ErrNotPlugin, []string{`"usage: frobnicate FILE\n"`}},
		{"junk-hang", plugins.ErrNotPlugin, []string{"interactive mode"}},
		{"exit", plugins.ErrNotPlugin, []string{"exit status 3", "cannot open config"}},
		{"other-cookie", plugins.ErrNotPlugin, []string{"exit status 1", "This binary is a plugin"}},
		{"version2", plugins.ErrProtocolVersion, []string{"protocol 2", "speaks 1"}},
		{"netrpc", plugins.ErrProtocolVersion, []string{`"netrpc"`}},
		{"hang", plugins.ErrStartTimeout, []string{"within 700ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			// Only "hang" may time out: the others get time to show what
			// they do even on a loaded machine.
			timeout := 20 * time.Second
			if tt.want == plugins.ErrStartTimeout {
				timeout = 700 * time.Millisecond
			}
			c, err := plugins.Options{StartTimeout: timeout}.Start(ctxT(t), self(t), nil, []string{modeEnv + "=" + tt.mode})
			if err == nil {
				c.Close()
				t.Fatalf("Start succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Start: %v\nwant %v", err, tt.want)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

// A plugin's handshake names the address the host dials, from outside the
// plugin's sandbox: a TCP address (loopback services, a name resolved
// through DNS) or a unix socket elsewhere on the host is refused before
// anything is dialled. Twin: every other start in this file serves on the
// socket toolbox made for it.
func TestStartRefusesForeignAddress(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	unixPath := filepath.Join(t.TempDir(), "host.sock")
	ux, err := net.Listen("unix", unixPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ux.Close()
	var dialled atomic.Int32
	countAccepts(&dialled, tcp, ux)
	for _, addr := range []string{"tcp|" + tcp.Addr().String(), "unix|" + unixPath, "unix|" + plugins.SocketBase() + "/../" + filepath.Base(unixPath)} {
		c, err := plugins.Options{StartTimeout: 20 * time.Second}.Start(ctxT(t), self(t), nil,
			[]string{modeEnv + "=foreign-address", "TOOLBOX_PLUGINS_TEST_ADDR=" + addr})
		if err == nil {
			c.Close()
			t.Fatalf("%s: Start succeeded", addr)
		}
		if !errors.Is(err, plugins.ErrHandshakeAddress) || !strings.Contains(err.Error(), strings.SplitN(addr, "|", 2)[1]) {
			t.Errorf("%s: Start: %v\nwant %v naming the address", addr, err, plugins.ErrHandshakeAddress)
		}
	}
	if n := dialled.Load(); n != 0 {
		t.Errorf("the host dialled the plugin's address %d times", n)
	}
}

// A plugin that names a socket in its own directory but put a link there
// (to a socket of the host: toolbox's daemon, another toolbox's plugin) is
// never dialled through the link: the host dials outside the plugin's
// sandbox, as root. Twin: every other start in this file dials the socket
// the plugin made.
func TestStartFollowsNoLinkToASocket(t *testing.T) {
	hostSock := filepath.Join(t.TempDir(), "host.sock")
	l, err := net.Listen("unix", hostSock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var dialled atomic.Int32
	countAccepts(&dialled, l)
	c, err := plugins.Options{StartTimeout: 20 * time.Second}.Start(ctxT(t), self(t), nil,
		[]string{modeEnv + "=link-address", "TOOLBOX_PLUGINS_TEST_ADDR=" + hostSock})
	if err == nil {
		// gRPC dials at the first call.
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _, err = c.Describe(ctx)
		if err == nil {
			t.Fatal("Describe succeeded through the link")
		}
	}
	if n := dialled.Load(); n != 0 {
		t.Errorf("the host dialled the socket the plugin's link names %d times (%v)", n, err)
	}
	if !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("err %v; want it to say the plugin's socket is not a socket", err)
	}
}

// countAccepts accepts and closes every connection to ls, counting them
// in n, until each listener is closed.
func countAccepts(n *atomic.Int32, ls ...net.Listener) {
	for _, l := range ls {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				n.Add(1)
				c.Close()
			}
		}()
	}
}

func TestStartNotFound(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	_, err := plugins.Start(ctxT(t), missing, nil, nil)
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Start(missing) = %v", err)
	}
}

func TestStartCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begun := time.Now()
	_, err := plugins.Start(ctx, self(t), nil, []string{modeEnv + "=hang"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Start = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(begun); d > 3*time.Second {
		t.Errorf("cancelled Start took %s", d)
	}
}

func TestInvalidDescribe(t *testing.T) {
	c := startFake(t, "bad-describe")
	d, raw, err := c.Describe(ctxT(t))
	if !errors.Is(err, plugins.ErrInvalidDescribe) || d != nil || len(raw) == 0 {
		t.Fatalf("Describe = %v, %s, %v; want ErrInvalidDescribe with the raw document", d, raw, err)
	}
	if !strings.Contains(err.Error(), "/args/0") {
		t.Errorf("error %q does not point at the bad arg", err)
	}
}

func TestSession(t *testing.T) {
	c := startFake(t, "good")
	events := make(chan string, 10)
	s, err := c.StartSession(ctxT(t), "", map[string]any{"text": "hi"}, func(o plugins.Output) {
		events <- string(o.Data)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-events; got != `{"ready":"hi"}` {
		t.Errorf("first event %s", got)
	}
	for _, ev := range []string{`{"a":1}`, `[2]`} {
		if err := s.Send([]byte(ev)); err != nil {
			t.Fatal(err)
		}
		if got := <-events; got != ev {
			t.Errorf("echo of %s = %s", ev, got)
		}
	}
	if err := s.CloseInput(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Errorf("Wait = %+v, %v", res, err)
	}
	if err := s.Send([]byte(`{}`)); err == nil {
		t.Errorf("Send after the end succeeded")
	}
}

func TestSessionCancel(t *testing.T) {
	c := startFake(t, "good")
	s, err := c.StartSession(ctxT(t), "", map[string]any{"text": "hi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Cancel()
	if _, err := s.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after Cancel = %v, want Canceled", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the Client's writer goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStderrIsKept(t *testing.T) {
	var stderr syncBuffer
	c, err := plugins.Options{Stderr: &stderr}.Start(ctxT(t), self(t), nil, []string{modeEnv + "=good"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAndCheck(t, c)
	if _, err := c.RunCommand(ctxT(t), "crash", nil, nil); !errors.Is(err, plugins.ErrPluginExited) {
		t.Fatalf("crash: %v", err)
	}
	tail := c.Stderr() // waits for the stderr of the exited plugin to drain
	if !strings.Contains(tail, "giving up") || !strings.Contains(stderr.String(), "giving up") {
		t.Errorf("Stderr() = %q, Options.Stderr got %q", tail, stderr.String())
	}
}
