package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listener is a host endpoint that records whether a tool reached it.
type listener struct {
	kind, addr string
	got        chan string
	close      func()
}

func listenStream(t *testing.T, kind, addr string) listener {
	t.Helper()
	ln, err := net.Listen(kind, addr)
	must(t, err)
	l := listener{kind: kind, addr: ln.Addr().String(), got: make(chan string, 1), close: func() { ln.Close() }}
	if kind == "unix" {
		l.addr = addr
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 64)
			n, _ := c.Read(b)
			c.Close()
			select {
			case l.got <- string(b[:n]):
			default:
			}
		}
	}()
	t.Cleanup(l.close)
	return l
}

func listenUDP(t *testing.T) listener {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	l := listener{kind: "udp", addr: pc.LocalAddr().String(), got: make(chan string, 1), close: func() { pc.Close() }}
	go func() {
		b := make([]byte, 64)
		for {
			n, _, err := pc.ReadFrom(b)
			if err != nil {
				return
			}
			select {
			case l.got <- string(b[:n]):
			default:
			}
		}
	}()
	t.Cleanup(l.close)
	return l
}

// reached runs the test binary as a network client under spec and
// reports whether l received its message.
func reached(t *testing.T, spec *Spec, l listener) (bool, string) {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	spec.ToolDir = filepath.Dir(exe)
	var errb bytes.Buffer
	p, err := Start(spec, Command{Path: exe, Args: []string{testToolArg, l.kind, l.addr}, Stderr: &errb})
	must(t, err)
	code, err := p.Wait()
	must(t, err)
	select {
	case <-l.got:
		return true, fmt.Sprintf("exit %d", code)
	case <-time.After(300 * time.Millisecond):
		return false, fmt.Sprintf("exit %d: %s", code, strings.TrimSpace(errb.String()))
	}
}

// net: none under bwrap cuts TCP, UDP and abstract unix sockets on the
// host's loopback, and a unix socket outside the declared paths is not
// even visible. Twins: the same clients reach the same listeners with
// net: host.
func TestNetNoneUnderBwrap(t *testing.T) {
	requireMechanism(t, Bwrap)
	tr := newTree(t)
	abstract := fmt.Sprintf("@toolbox-sandbox-test-%d", os.Getpid())
	cases := []struct {
		name    string
		listen  func() listener
		hostToo bool // reachable with net: host (the positive twin)
	}{
		{"tcp", func() listener { return listenStream(t, "tcp", "127.0.0.1:0") }, true},
		{"udp", func() listener { return listenUDP(t) }, true},
		{"abstract-unix", func() listener { return listenStream(t, "unix", abstract) }, true},
		{"unix-outside", func() listener { return listenStream(t, "unix", tr.Out+"/sock") }, false},
		{"unix-declared", func() listener { return listenStream(t, "unix", tr.Work+"/sock") }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := c.listen()
			defer l.close()
			spec := tr.spec(Bwrap)
			spec.NetNone = true
			ok, why := reached(t, spec, l)
			switch {
			case c.name == "unix-declared" && !ok:
				// A socket inside a declared path is part of that path:
				// net: none does not (and cannot) hide it.
				t.Errorf("a socket in a declared writable path was unreachable: %s", why)
			case c.name != "unix-declared" && ok:
				t.Errorf("net: none reached the host's %s listener (%s)", c.name, why)
			}
			if c.hostToo {
				spec = tr.spec(Bwrap)
				if ok, why := reached(t, spec, l); !ok {
					t.Errorf("net: host did not reach the %s listener: %s", c.name, why)
				}
			}
		})
	}
}

// Landlock cannot cut the network: it refuses net: none at Resolve and at
// Start alike.
func TestNetNoneRefusedByLandlock(t *testing.T) {
	_, err := (Support{Landlock: true, Bwrap: true}).Resolve(Landlock, Need{Sandbox: true, NetNone: true})
	if r := wantRefusal(t, err, FieldNet); r.Mechanism != Landlock {
		t.Fatalf("refusal names mechanism %q", r.Mechanism)
	}
	_, err = Start(pin(&Spec{Mechanism: Landlock, NetNone: true}), Command{Path: "/bin/true"})
	wantRefusal(t, err, FieldNet)
}
