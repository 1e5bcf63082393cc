package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// cpuHogs starts n busy loops for the rest of the test (killed by pid at
// its end), so that the output copy competes for the CPU with them.
func cpuHogs(t *testing.T, n int) {
	t.Helper()
	for range n {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		must(t, c.Start())
		t.Cleanup(func() {
			_ = c.Process.Kill()
			_ = c.Wait()
		})
	}
}

// counter counts the bytes written to it; safe for concurrent use.
type counter struct{ n atomic.Int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// Every byte a tool wrote before it exited is delivered, under CPU load,
// with many calls in parallel: 4 MiB on stdout and 64 KiB on stderr, then
// the exit; and a tool whose setsid grandchild keeps stdout open (killed
// with the tool's tree, so the call still ends at once).
func TestExactOutputUnderLoad(t *testing.T) {
	requireSetsid(t)
	const out, errBytes = 4 << 20, 64 << 10
	cpuHogs(t, 4)
	marker := fmt.Sprintf("930.%d", os.Getpid()%1000)
	scripts := map[string]string{
		"exit":       fmt.Sprintf(`head -c %d /dev/zero; head -c %d /dev/zero >&2`, out, errBytes),
		"grandchild": fmt.Sprintf(`setsid sleep %s & head -c %d /dev/zero; head -c %d /dev/zero >&2`, marker, out, errBytes),
	}
	defer func() { killAll(processesWithArgs("sleep", marker)) }()
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			const workers, each = 6, 4
			var wg sync.WaitGroup
			errs := make(chan string, workers*each*len(scripts))
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						name := "exit"
						if (w+i)%2 == 1 {
							name = "grandchild"
						}
						var o, e counter
						p, err := Start(&Spec{Mechanism: m}, Command{
							Path: "/bin/sh", Args: []string{"-c", scripts[name]},
							Env: []string{"PATH=/usr/bin:/bin"}, Stdout: &o, Stderr: &e,
						})
						if err != nil {
							errs <- err.Error()
							return
						}
						code, err := p.Wait()
						if code != 0 || err != nil || o.n.Load() != out || e.n.Load() != errBytes || p.OutputCut() {
							errs <- fmt.Sprintf("%s: exit %d (%v), stdout %d of %d bytes, stderr %d of %d, cut %v",
								name, code, err, o.n.Load(), out, e.n.Load(), errBytes, p.OutputCut())
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			lost := 0
			for e := range errs {
				lost++
				if lost <= 5 {
					t.Error(e)
				}
			}
			if lost > 0 {
				t.Fatalf("%d of %d calls lost output", lost, workers*each)
			}
			if !eventually(func() bool { return len(processesWithArgs("sleep", marker)) == 0 }) {
				t.Fatalf("setsid grandchildren outlived their tools: %v", processesWithArgs("sleep", marker))
			}
		})
	}
}

// slowWriter blocks its first write for delay: a reader that lags behind
// the tool (a busy terminal, a loaded machine).
type slowWriter struct {
	once  sync.Once
	delay time.Duration
	mu    sync.Mutex
	n     int
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { time.Sleep(w.delay) })
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += len(p)
	return len(p), nil
}

// A reader that lags more than the drain grace behind a tool that has
// already exited still gets every byte (os/exec's WaitDelay dropped what
// was left in the pipe).
func TestLaggingReaderGetsEveryByte(t *testing.T) {
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			w := &slowWriter{delay: drainGrace + 300*time.Millisecond}
			p, err := Start(&Spec{Mechanism: m}, Command{
				Path: "/bin/sh", Args: []string{"-c", "head -c 60000 /dev/zero"},
				Env: []string{"PATH=/usr/bin:/bin"}, Stdout: w,
			})
			must(t, err)
			code, err := p.Wait()
			if code != 0 || err != nil || w.n != 60000 || p.OutputCut() {
				t.Fatalf("exit %d (%v), %d of 60000 bytes, cut %v", code, err, w.n, p.OutputCut())
			}
		})
	}
}

// A tool that hands its stdout to a process outside its tree (here the
// test itself, over a unix socket) cannot hold the call open: it ends
// within the drain grace of the tool's exit, with every byte the tool
// wrote, and says the output may be cut. The twin: the same tool keeping
// its stdout to itself is not reported cut.
func TestForeignHolderCutsOnlyLaterOutput(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	dir, err := os.MkdirTemp("", "hold")
	must(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	must(t, err)
	defer ln.Close()
	held := make(chan *os.File, 1)
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			held <- nil
			return
		}
		defer c.Close()
		held <- receiveFD(c)
	}()
	var o counter
	p, err := Start(nil, Command{Path: exe, Args: []string{testToolArg, "handout", sock}, Stdout: &o})
	must(t, err)
	f := <-held
	if f == nil {
		t.Fatal("the tool handed no descriptor out")
	}
	defer f.Close()
	exited := time.Now()
	code, err := p.Wait()
	took := time.Since(exited)
	// What the holder writes now comes after the exit: it may be cut.
	_, _ = f.Write([]byte("late\n"))
	if code != 0 || err != nil || o.n.Load() != handoutBytes {
		t.Fatalf("exit %d (%v), %d of %d bytes", code, err, o.n.Load(), handoutBytes)
	}
	if !p.OutputCut() {
		t.Fatal("a stdout still held open after the exit was not reported")
	}
	if took > drainGrace+2*time.Second {
		t.Fatalf("the call ended %s after the tool's exit, want about %s", took, drainGrace)
	}

	p, err = Start(nil, Command{Path: exe, Args: []string{testToolArg, "handout", "-"}, Stdout: &o})
	must(t, err)
	if code, err := p.Wait(); code != 0 || err != nil || p.OutputCut() {
		t.Fatalf("twin: exit %d (%v), cut %v", code, err, p.OutputCut())
	}
}

// handoutBytes is what the "handout" test tool writes before it exits.
const handoutBytes = 200 << 10

// handout is the test tool of TestForeignHolderCutsOnlyLaterOutput: it
// sends its stdout over the unix socket addr ("-": to nobody), then writes
// handoutBytes to stdout and exits.
func handout(addr string) int {
	if addr != "-" {
		c, err := net.Dial("unix", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rights := syscall.UnixRights(1)
		if _, _, err := c.(*net.UnixConn).WriteMsgUnix([]byte("x"), rights, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.Close()
	}
	buf := []byte(strings.Repeat("x", 1024))
	for range handoutBytes / len(buf) {
		if _, err := os.Stdout.Write(buf); err != nil {
			return 1
		}
	}
	return 0
}

// receiveFD reads one descriptor sent over c.
func receiveFD(c *net.UnixConn) *os.File {
	buf, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(4))
	_, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) == 0 {
		return nil
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) == 0 {
		return nil
	}
	return os.NewFile(uintptr(fds[0]), "held-stdout")
}
