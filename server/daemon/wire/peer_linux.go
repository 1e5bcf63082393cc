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
	cred, err := peerCred(c)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}

// PeerPID returns the pid of the process at the other end of c: for a
// client's connection, the daemon that listens (SO_PEERCRED).
func PeerPID(c *net.UnixConn) (int, error) {
	cred, err := peerCred(c)
	if err != nil {
		return -1, err
	}
	return int(cred.Pid), nil
}

func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("reading the peer's credentials: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("reading the peer's credentials: %w", err)
	}
	if cerr != nil {
		return nil, fmt.Errorf("reading the peer's credentials: %w", cerr)
	}
	return cred, nil
}
