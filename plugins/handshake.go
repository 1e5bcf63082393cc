package plugins

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
)

// handshakeWatch stands between the plugin's stdout and go-plugin. It
// forwards the handshake line only when it is the first thing the plugin
// printed; anything else makes the start fail, and what was seen tells why:
//
//   - junk, then a handshake line within handshakeGrace: the plugin wrote to
//     stdout before the handshake (ErrStdoutBeforeHandshake);
//   - junk and no handshake line: not a plugin (ErrNotPlugin);
//   - a handshake line naming another version or transport
//     (ErrProtocolVersion): forwarded, go-plugin refuses it, and the line
//     explains the refusal.
//
// Refusing is done by closing the forwarded stdout, which go-plugin reads as
// "no handshake" and turns into a failed start at once.
type handshakeWatch struct {
	mu    sync.Mutex
	fwd   *io.PipeWriter
	phase hsPhase
	// junk is the beginning of what was printed before any handshake line.
	junk []byte
	// line is the handshake line, once seen.
	line  string
	timer *time.Timer
	// socketDir is the directory go-plugin made for this start; the only
	// address a handshake may name is a unix socket directly inside it.
	socketDir string
	// badAddr is the address of a handshake refused for naming another.
	badAddr string
}

type hsPhase int

const (
	hsWaiting   hsPhase = iota // nothing decided yet
	hsForwarded                // the handshake line went to go-plugin
	hsRefused                  // go-plugin was given EOF instead
)

// junkKept bounds how much pre-handshake output is kept for messages.
const junkKept = 256

// observe handles one chunk of stdout; complete says that it ends a line.
func (h *handshakeWatch) observe(chunk []byte, complete bool) {
	h.mu.Lock()
	if h.phase != hsWaiting {
		h.mu.Unlock()
		return
	}
	line := strings.TrimRight(string(chunk), "\r\n")
	if hs, ok := parseHandshake(line); ok && complete {
		h.line = line
		if hs.mismatch() == "" && !hs.addressInside(h.socketDir) {
			// The host would dial what the plugin names: a TCP address
			// (its loopback services, a name that leaks through DNS) or any
			// unix socket on the host, from outside the plugin's sandbox.
			h.badAddr = hs.network + ":" + hs.address
			h.refuseLocked()
			h.mu.Unlock()
			return
		}
		if len(h.junk) > 0 {
			h.refuseLocked()
			h.mu.Unlock()
			return
		}
		h.phase = hsForwarded
		h.mu.Unlock()
		// go-plugin is reading: this write returns once it has the line.
		_, _ = h.fwd.Write(chunk)
		return
	}
	if room := junkKept - len(h.junk); room > 0 {
		h.junk = append(h.junk, chunk[:min(room, len(chunk))]...)
	}
	if h.timer == nil {
		h.timer = time.AfterFunc(handshakeGrace, h.giveUp)
	}
	h.mu.Unlock()
}

// giveUp refuses the start when no handshake line followed the junk.
func (h *handshakeWatch) giveUp() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.phase == hsWaiting {
		h.refuseLocked()
	}
}

func (h *handshakeWatch) refuseLocked() {
	h.phase = hsRefused
	if h.timer != nil {
		h.timer.Stop()
	}
	h.fwd.Close()
}

// eof is called when the plugin's stdout is closed (it exited).
func (h *handshakeWatch) eof() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.phase == hsWaiting {
		h.phase = hsRefused
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	h.fwd.Close()
}

// snapshot returns what was seen: the junk printed before any handshake,
// the handshake line ("" when none) and the address of a handshake refused
// for naming one outside the socket directory ("" when none).
func (h *handshakeWatch) snapshot() (junk, line, badAddr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.junk), h.line, h.badAddr
}

// handshake is a parsed go-plugin handshake line:
// CORE-VERSION|APP-VERSION|NETWORK|ADDRESS|PROTOCOL[|...].
type handshake struct {
	core, app        int
	network, address string
	protocol         string
}

// addressInside reports whether the handshake names a unix socket directly
// inside dir, the socket directory toolbox had go-plugin make for this
// start (and granted to the plugin's sandbox). Nothing else is dialled.
func (hs handshake) addressInside(dir string) bool {
	return hs.network == "unix" && dir != "" &&
		filepath.IsAbs(hs.address) && filepath.Clean(hs.address) == hs.address &&
		filepath.Dir(hs.address) == filepath.Clean(dir)
}

// parseHandshake recognises a go-plugin handshake line; ok is false for
// anything else.
func parseHandshake(line string) (hs handshake, ok bool) {
	parts := strings.Split(strings.TrimSpace(line), "|")
	if len(parts) < 4 || (parts[2] != "unix" && parts[2] != "tcp") || parts[3] == "" {
		return hs, false
	}
	var err error
	if hs.core, err = strconv.Atoi(parts[0]); err != nil {
		return hs, false
	}
	if hs.app, err = strconv.Atoi(parts[1]); err != nil {
		return hs, false
	}
	hs.network, hs.address = parts[2], parts[3]
	hs.protocol = string(plugin.ProtocolNetRPC) // go-plugin's default when absent
	if len(parts) >= 5 && parts[4] != "" {
		hs.protocol = parts[4]
	}
	return hs, true
}

// mismatch says why go-plugin refuses this handshake, "" when it should not.
func (hs handshake) mismatch() string {
	switch {
	case hs.core != plugin.CoreProtocolVersion:
		return fmt.Sprintf("it speaks go-plugin core protocol %d, this toolbox speaks %d (rebuild the plugin against go-plugin v1)", hs.core, plugin.CoreProtocolVersion)
	case hs.app != ProtocolVersion:
		return fmt.Sprintf("it speaks toolbox plugin protocol %d, this toolbox speaks %d (rebuild the plugin with this toolbox's plugins/sdk)", hs.app, ProtocolVersion)
	case hs.protocol != string(plugin.ProtocolGRPC):
		return fmt.Sprintf("it serves %q, toolbox plugins must serve %q", hs.protocol, plugin.ProtocolGRPC)
	}
	return ""
}
