package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// hostSlots is the semaphore of slots.go: n slot files, opened once (close
// on exec, so no child inherits a lock), each locked with flock while a
// process of this supervisor holds it. Its methods are called with the
// supervisor's mutex held.
type hostSlots struct {
	files []*os.File
	held  []bool
}

// openHostSlots creates dir (mode 0700) and its n slot files (mode 0600).
func openHostSlots(dir string, n int) (*hostSlots, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the slots directory: %w", err)
	}
	h := &hostSlots{files: make([]*os.File, n), held: make([]bool, n)}
	for i := range n {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("slot-%02d", i)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("opening a slot file: %w", err)
		}
		h.files[i] = f
	}
	return h, nil
}

// acquire locks a free slot and returns its index, or -1 when every slot
// is held (by this supervisor or another one). An error other than "held
// elsewhere" counts the slot as held: a slot that cannot be locked is
// never used unlocked.
func (h *hostSlots) acquire() int {
	for i, f := range h.files {
		if h.held[i] {
			continue
		}
		if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err == nil {
			h.held[i] = true
			return i
		}
	}
	return -1
}

// release unlocks slot i (i < 0: nothing).
func (h *hostSlots) release(i int) {
	if i < 0 || !h.held[i] || h.files[i] == nil {
		return
	}
	_ = flock(h.files[i], unix.LOCK_UN)
	h.held[i] = false
}

// close closes every slot file, which drops this supervisor's locks.
func (h *hostSlots) close() {
	for i, f := range h.files {
		if f != nil {
			f.Close()
			h.files[i] = nil
		}
	}
}

// flock applies op to f, retrying when a signal interrupts it.
func flock(f *os.File, op int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), op)
			if !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
