package wire

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerUID returns the uid of the process at the other end of c
// (SO_PEERCRED: the credentials it had when it connected). The daemon's
// socket and the MCP unix socket of `toolbox serve --mcp-unix` both serve
// only peers of their own uid.
func PeerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("reading the peer's credentials: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, fmt.Errorf("reading the peer's credentials: %w", err)
	}
	if cerr != nil {
		return -1, fmt.Errorf("reading the peer's credentials: %w", cerr)
	}
	return int(cred.Uid), nil
}
