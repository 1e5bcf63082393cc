package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// DiskLock is the lock file on disk as read once (ReadDiskLock): its bytes
// and their decoding, kept apart so that a lock that does not load can
// still be compared (it differs) and a missing one told from a bad one.
type DiskLock struct {
	// Data is the file's bytes; nil when ReadErr is set.
	Data []byte
	// ReadErr is why the file could not be read: it wraps
	// fs.ErrNotExist when there is no lock, inputfile.ErrNotRegular or
	// *inputfile.TooLargeError when it is not one.
	ReadErr error
	// Lock is Data decoded (Unmarshal); nil when ReadErr or Bad is set.
	Lock *Lock
	// Bad is why Data does not decode (Unmarshal's error).
	Bad error
}

// ReadDiskLock reads the lock at path (at most MaxLockBytes, a regular
// file only) and decodes it. It never fails: what went wrong is in the
// result's ReadErr or Bad.
func ReadDiskLock(path string) DiskLock {
	var d DiskLock
	if d.Data, d.ReadErr = inputfile.ReadFile(path, MaxLockBytes); d.ReadErr != nil {
		d.Data = nil
		return d
	}
	if d.Lock, d.Bad = Unmarshal(d.Data); d.Bad != nil {
		d.Lock = nil
	}
	return d
}

// Drift compares next, the lock toolbox would write (data is Marshal(next),
// passed by a caller that already has it), with the lock on disk, for
// `toolbox lock --check`. It returns the lock on disk when it loads and
// what differs, one line each (Diff's lines; "the lock on disk does not
// load: …" when it does not; "the lock on disk is not in canonical form"
// when only its bytes differ), nil when the two agree. A toolbox file
// whose bytes changed but whose configuration did not (a comment, toolbox
// fmt) is no difference. Errors: d.ReadErr when the lock could not be read
// (wrapping fs.ErrNotExist when there is none), or Marshal's.
func (d DiskLock) Drift(next *Lock, data []byte) (*Lock, []string, error) {
	if d.ReadErr != nil {
		return nil, nil, d.ReadErr
	}
	// prev is nil when the lock on disk did not load, and also in a
	// DiskLock built by hand with neither Lock nor Bad: both are a lock
	// that differs, never a nil dereference.
	prev := d.Lock
	if prev != nil && prev.File.Path == next.File.Path && prev.File.Config == next.File.Config && prev.File.SHA256 != next.File.SHA256 {
		// Only the toolbox file's bytes changed: its configuration is
		// the locked one, which is no drift.
		same := *next
		same.File.SHA256 = prev.File.SHA256
		var err error
		if data, err = Marshal(&same); err != nil {
			return nil, nil, err
		}
		next = &same
	}
	if bytes.Equal(d.Data, data) {
		return prev, nil, nil
	}
	var changes []string
	switch {
	case prev != nil:
		changes = Diff(prev, next)
	case d.Bad != nil:
		changes = []string{fmt.Sprintf("the lock on disk does not load: %v", d.Bad)}
	default:
		changes = []string{"the lock on disk was not decoded"}
	}
	if len(changes) == 0 {
		changes = []string{"the lock on disk is not in canonical form"}
	}
	return prev, changes, nil
}

// ProbedDrift is Drift for `toolbox check --probe`: probed is the lock the
// probes built now. No lock on disk is no difference (nil, nil, nil:
// check --probe also serves before the first lock), and the probes'
// results and active backends are taken from the lock on disk
// (withHealthOf): a check that passes or fails now is the machine's live
// state, not drift. Errors: d.ReadErr other than fs.ErrNotExist, or
// Marshal's.
func (d DiskLock) ProbedDrift(probed *Lock) (*Lock, []string, error) {
	if errors.Is(d.ReadErr, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if d.ReadErr != nil {
		return nil, nil, d.ReadErr
	}
	if d.Lock != nil {
		probed = withHealthOf(probed, d.Lock)
	}
	data, err := Marshal(probed)
	if err != nil {
		return nil, nil, err
	}
	return d.Drift(probed, data)
}

// withHealthOf returns a copy of probed holding disk's probe results (for
// the tools whose describe documents both locks hold) and active backends
// (for the capabilities whose backend lists are equal): what a lock says
// about the machine's live state rather than about its tools (what they
// declare, their binaries, how they run). Neither argument is changed;
// maps are copied, unchanged tools and capabilities shared.
func withHealthOf(probed, disk *Lock) *Lock {
	out := *probed
	out.Tools = make(map[string]*Tool, len(probed.Tools))
	for name, t := range probed.Tools {
		if d := disk.Tools[name]; d != nil && t.Describe != nil && d.Describe != nil {
			c := *t
			c.Probe = d.Probe
			t = &c
		}
		out.Tools[name] = t
	}
	out.Capabilities = make(map[string]*Capability, len(probed.Capabilities))
	for name, c := range probed.Capabilities {
		if d := disk.Capabilities[name]; d != nil && slices.Equal(d.Backends, c.Backends) {
			cc := *c
			cc.Active = d.Active
			c = &cc
		}
		out.Capabilities[name] = c
	}
	return &out
}
