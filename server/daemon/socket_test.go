package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// The socket is 0600 in a 0700 directory, and serve.pid holds the pid.
func TestSocketIsPrivate(t *testing.T) {
	d := newFixture(t).serve(t)
	fi, err := os.Lstat(d.srv.Socket())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	di, err := os.Stat(d.state)
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v (%v), want 0700", di.Mode(), err)
	}
	data, err := os.ReadFile(filepath.Join(d.state, PIDFile))
	if err != nil || strings.TrimSpace(string(data)) != itoa(os.Getpid()) {
		t.Errorf("%s = %q, %v", PIDFile, data, err)
	}
}

// A peer of another uid is refused with forbidden, whatever the file
// modes say.
func TestPeerOfAnotherUIDIsRefused(t *testing.T) {
	f := newFixture(t)
	f.writeLock(t)
	// As if the daemon belonged to someone else.
	d := serveAt(t, f.hcl(), filepath.Join(t.TempDir(), "state"), func(s *Server) { s.uid = os.Getuid() + 1 })
	_, err := d.client.Ping(context.Background())
	if code(err) != wire.CodeForbidden || !strings.Contains(err.Error(), "only uid") {
		t.Fatalf("ping from another uid: %v, want forbidden", err)
	}
}

// A real process of another user (nobody) that gets past the file modes
// (opened up here on purpose) is still refused by SO_PEERCRED.
func TestPeerCredentialsOfARealProcess(t *testing.T) {
	testenv.NeedRoot(t)
	d := newFixture(t).serve(t)
	// Let nobody reach the socket and run a copy of this test binary.
	for _, p := range []string{filepath.Dir(filepath.Dir(d.state)), filepath.Dir(d.state), d.state} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(d.srv.Socket(), 0o666); err != nil {
		t.Fatal(err)
	}
	bin := copyExecutable(t)
	run := func(uid uint32) string {
		cmd := exec.Command(bin)
		cmd.Env = []string{clientEnv + "=" + d.srv.Socket()}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client as uid %d: %v\n%s", uid, err, stderr.String())
		}
		if stderr.Len() > 0 {
			t.Logf("client as uid %d: %s", uid, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(65534); got != wire.CodeForbidden {
		t.Errorf("client as nobody: %q, want %q", got, wire.CodeForbidden)
	}
	if got := run(uint32(os.Getuid())); got != "ok" {
		t.Errorf("client as the owner: %q, want ok", got)
	}
}

// copyExecutable copies this test binary where any user can run it.
func copyExecutable(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(dir, "client.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// One daemon per state dir: a second Listen is refused, naming the pid.
func TestSecondDaemonRefused(t *testing.T) {
	f := newFixture(t)
	d := f.serve(t)
	lf, err := ReadLock(f.hcl())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Listen(Options{StateDir: d.state, Lock: lf})
	if !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), itoa(os.Getpid())) {
		t.Fatalf("second Listen: %v, want ErrRunning naming pid %d", err, os.Getpid())
	}
	if _, err := d.client.Ping(context.Background()); err != nil {
		t.Errorf("the first daemon stopped answering: %v", err)
	}
}

// A socket left by a killed daemon is replaced; a file that is not a
// socket, or a state dir others may enter, is refused.
func TestStateDirChecks(t *testing.T) {
	f := newFixture(t)
	f.writeLock(t)
	lf, err := ReadLock(f.hcl())
	if err != nil {
		t.Fatal(err)
	}

	stale := filepath.Join(t.TempDir(), "stale")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: wire.SocketPath(stale), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody listens: what SIGKILL leaves
	if _, err := (&wire.Client{Socket: wire.SocketPath(stale)}).Ping(context.Background()); !errors.Is(err, wire.ErrNoDaemon) {
		t.Errorf("ping of a stale socket: %v, want ErrNoDaemon", err)
	}
	srv, err := Listen(Options{StateDir: stale, Lock: lf})
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	srv.Close()
	if _, err := os.Lstat(wire.SocketPath(stale)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left the socket: %v", err)
	}

	notSock := filepath.Join(t.TempDir(), "file")
	os.Mkdir(notSock, 0o700)
	locktest.WriteFile(t, wire.SocketPath(notSock), "x", 0o600)
	if _, err := Listen(Options{StateDir: notSock, Lock: lf}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen with a regular file as serve.sock: %v", err)
	}

	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o755)
	if _, err := Listen(Options{StateDir: open, Lock: lf}); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("Listen in a 0755 state dir: %v", err)
	}
}

// Without a daemon the client says so (ErrNoDaemon), for a missing socket.
func TestNoDaemon(t *testing.T) {
	c := wire.NewClient(t.TempDir())
	_, err := c.List(context.Background(), "s")
	var nd *wire.NoDaemonError
	if !errors.As(err, &nd) || !errors.Is(err, wire.ErrNoDaemon) || nd.Socket != c.Socket {
		t.Fatalf("list without a daemon: %v", err)
	}
	if wire.ErrorOf(err).Code != wire.CodeNoDaemon {
		t.Errorf("code %q", wire.ErrorOf(err).Code)
	}
}

// A state dir deeper than a sockaddr_un holds still works (through a
// directory descriptor).
func TestLongSocketPath(t *testing.T) {
	f := newFixture(t)
	f.writeLock(t)
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if len(wire.SocketPath(deep)) <= 108 {
		t.Fatalf("path %q is not long enough for the test", deep)
	}
	d := serveAt(t, f.hcl(), deep)
	if _, err := d.client.Ping(context.Background()); err != nil {
		t.Fatalf("ping over a long path: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
