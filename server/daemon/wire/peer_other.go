//go:build !linux

package wire

import (
	"errors"
	"net"
)

// PeerUID needs SO_PEERCRED, which only Linux has here: elsewhere every
// peer is refused.
func PeerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("checking a unix socket's peer needs SO_PEERCRED (Linux only)")
}

// PeerPID needs SO_PEERCRED too: elsewhere the pid is unknown.
func PeerPID(*net.UnixConn) (int, error) {
	return -1, errors.New("reading a unix socket's peer needs SO_PEERCRED (Linux only)")
}
