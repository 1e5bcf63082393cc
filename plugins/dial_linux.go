package plugins

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// dialSocket connects to the unix socket name directly inside dir without
// following a symbolic link there. dir is the socket directory toolbox had
// go-plugin make, and the plugin writes it: a link it put at name (to
// toolbox's daemon socket, another toolbox's plugin, any service of the
// host) would otherwise have toolbox, outside every sandbox, dial that
// instead. So the name is opened O_PATH|O_NOFOLLOW from the directory's
// descriptor, checked to be a socket, and connected to through
// /proc/self/fd/N, which reaches that inode and no other.
func dialSocket(ctx context.Context, dir, name string) (net.Conn, error) {
	d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the plugin's socket directory %q: %w", dir, err)
	}
	defer unix.Close(d)
	fd, err := unix.Openat(d, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the plugin's socket %q: %w", filepath.Join(dir, name), err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("the plugin's socket %q: %w", filepath.Join(dir, name), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("the plugin's socket %q is not a socket (a symbolic link or another file: mode %#o)", filepath.Join(dir, name), st.Mode&unix.S_IFMT)
	}
	var dl net.Dialer
	return dl.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
}
