package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolbox-dev/toolbox/internal/shq"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// PIDFile is the file in the state dir a daemon holds an exclusive flock
// on while it runs; it contains the daemon's pid.
const PIDFile = "serve.pid"

// ErrRunning: another daemon serves the state dir.
var ErrRunning = errors.New("another toolbox daemon is running")

// claimStateDir creates or checks the state dir and takes its flock. It
// returns the open lock file, which holds the claim until it is closed.
func claimStateDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the state dir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("state dir %q is not a directory", dir)
	}
	if uid, ok := ownerUID(fi); ok && uid != os.Getuid() {
		return nil, fmt.Errorf("state dir %q belongs to uid %d, not to this user (uid %d); choose another --state-dir", dir, uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("state dir %q is mode %#o: others could reach the daemon's socket; run `chmod 700 %s` or choose another --state-dir", dir, perm, shq.Quote(dir))
	}
	path := filepath.Join(dir, PIDFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := tryLock(f); err != nil {
		data, _ := os.ReadFile(path)
		f.Close()
		if pid := strings.TrimSpace(string(data)); pid != "" {
			return nil, fmt.Errorf("%w on %s (pid %s): stop it first, or choose another --state-dir", ErrRunning, dir, pid)
		}
		return nil, fmt.Errorf("%w on %s: stop it first, or choose another --state-dir", ErrRunning, dir)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// clearStaleSocket removes a socket a dead daemon left behind. It refuses
// a path that is not a socket, and one where something still answers.
func clearStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; remove it", path)
	}
	addr, closeDir, err := wire.UnixPath(path)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("unix", addr, time.Second)
	closeDir()
	if err == nil {
		conn.Close()
		return fmt.Errorf("%w: something answers on %s; stop it first, or choose another --state-dir", ErrRunning, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale socket %s: %w", path, err)
	}
	return nil
}
