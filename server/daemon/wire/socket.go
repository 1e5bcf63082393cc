package wire

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
)

// SocketName is the daemon's socket, in the state dir.
const SocketName = "serve.sock"

// maxSocketPath is the longest path a sockaddr_un holds (108 bytes on
// Linux, with its terminating NUL); longer paths go through UnixPath's
// directory descriptor.
const maxSocketPath = 107

// DefaultStateDir is where the daemon keeps its socket and records when no
// --state-dir is given: $XDG_STATE_HOME/toolbox when XDG_STATE_HOME is an
// absolute path, else ~/.local/state/toolbox (the XDG default). It is ""
// when neither can be found (no home directory).
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "toolbox")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "state", "toolbox")
	}
	return ""
}

// StateDir returns flag when it is set, else DefaultStateDir; an error
// says how to set one when neither exists.
func StateDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if d := DefaultStateDir(); d != "" {
		return d, nil
	}
	return "", fmt.Errorf("no state directory: set --state-dir, $XDG_STATE_HOME or $HOME")
}

// SocketPath is the daemon's socket in stateDir.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

// UnixPath returns a path that reaches path for bind and connect. A path
// that fits a sockaddr_un is returned as it is; a longer one (deep
// temporary directories) is reached through an open descriptor of its
// directory, /proc/self/fd/N/NAME, which close releases. close is never
// nil.
func UnixPath(path string) (addr string, close func(), err error) {
	if len(path) <= maxSocketPath {
		return path, func() {}, nil
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return "", func() {}, fmt.Errorf("opening the socket's directory: %w", err)
	}
	addr = fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	if len(addr) > maxSocketPath {
		dir.Close()
		return "", func() {}, fmt.Errorf("socket path %q is too long: %d bytes, and even its name %q is over the %d bytes of a unix socket address; use a shorter directory or name", path, len(path), filepath.Base(path), maxSocketPath)
	}
	return addr, func() { dir.Close() }, nil
}

// Listen binds a listening unix socket at path, mode 0600, whatever the
// path's length (UnixPath). It binds under a temporary name beside it
// (path.PID) and renames that into place, so that path only ever names a
// socket that listens, with its final mode. The listener does not remove
// path when closed (its bound name is a /proc/self/fd path when path is
// long): the caller removes path, if it is still the file fi describes.
func Listen(path string) (*net.UnixListener, fs.FileInfo, error) {
	tmp := fmt.Sprintf("%s.%d", path, os.Getpid())
	_ = os.Remove(tmp)
	addr, closeDir, err := UnixPath(tmp)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	closeDir()
	if err != nil {
		return nil, nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (*net.UnixListener, fs.FileInfo, error) {
		ln.Close()
		os.Remove(tmp)
		return nil, nil, err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(fmt.Errorf("making the socket private: %w", err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("placing the socket at %s: %w", path, err))
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("checking the socket: %w", err)
	}
	return ln, fi, nil
}
