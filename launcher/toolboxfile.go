package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/toolbox-dev/toolbox/manifest"
)

// ConfigDigest computes the digest of a toolbox file's parsed
// configuration (compiler.ConfigDigestFile), which the lock pins. It needs
// the HCL parser, which the toolbox binary does not link: toolbox-core
// sets it at start (cmd/internal/corecmd), tests set it when they need it.
// nil makes VerifyToolboxFile refuse a toolbox file whose bytes changed
// with an error wrapping ErrNeedsConfigParser, which the toolbox binary
// answers by handing the call to toolbox-core.
var ConfigDigest func(path string) (string, error)

// ErrNeedsConfigParser is wrapped by VerifyToolboxFile's error when the
// toolbox file's bytes differ from the lock's and ConfigDigest is nil:
// only a binary that links the HCL parser can tell whether its
// configuration changed. Nothing was started.
var ErrNeedsConfigParser = errors.New("verifying its configuration needs the HCL parser")

// VerifyToolboxFile checks that the toolbox file of the lock at lockPath
// (l.File.Path, relative to the lock's directory) still holds the locked
// configuration (DESIGN.md §4): bytes equal to the locked ones pass at
// once; other bytes pass when their configuration digest (ConfigDigest) is
// the locked one, so a comment or `toolbox fmt` needs no new lock. A
// failure is a *RefusedError whose fix is `toolbox lock`. It hashes the
// file each time: a call that verifies it more than once (Run, before
// each backend it tries) keeps a ToolboxFileCheck instead.
func VerifyToolboxFile(lockPath string, l *manifest.Lock) error {
	return newToolboxFileCheck(lockPath, l).Verify()
}

// ToolboxFileCheck is the check of a lock's toolbox file for one call:
// however often the call asks, the file is hashed once and its verdict
// (VerifyToolboxFile's) reached once. Make it with CheckToolboxFile; pass
// it on in Request.ToolboxFile. Safe for concurrent use.
type ToolboxFileCheck struct {
	file string         // the toolbox file: lockPath's directory joined with l.File.Path
	lock *manifest.Lock // the lock it was made for

	hashOnce sync.Once
	hashErr  error // checkHash's: nil when the bytes are the locked ones

	verifyOnce sync.Once
	verifyErr  error
}

// CheckToolboxFile hashes the toolbox file of lock l at lockPath now: what
// BytesChanged says, and the first step of Verify, which reuses it.
func CheckToolboxFile(lockPath string, l *manifest.Lock) *ToolboxFileCheck {
	c := newToolboxFileCheck(lockPath, l)
	c.hashed()
	return c
}

func newToolboxFileCheck(lockPath string, l *manifest.Lock) *ToolboxFileCheck {
	return &ToolboxFileCheck{file: toolboxFilePath(lockPath, l), lock: l}
}

// toolboxFilePath is the toolbox file of l at lockPath.
func toolboxFilePath(lockPath string, l *manifest.Lock) string {
	return filepath.Join(filepath.Dir(lockPath), filepath.FromSlash(l.File.Path))
}

// isFor says whether c was made for lock l at lockPath, which may be
// spelt another way (relative, absolute); a nil c is for nothing.
func (c *ToolboxFileCheck) isFor(lockPath string, l *manifest.Lock) bool {
	if c == nil || l == nil || c.lock != l {
		return false
	}
	a, aerr := filepath.Abs(c.file)
	b, berr := filepath.Abs(toolboxFilePath(lockPath, l))
	return aerr == nil && berr == nil && a == b
}

// hashed hashes the file the first time and returns checkHash's verdict.
func (c *ToolboxFileCheck) hashed() error {
	c.hashOnce.Do(func() { c.hashErr = checkHash(c.file, c.lock.File.SHA256) })
	return c.hashErr
}

// BytesChanged says whether the toolbox file's bytes differ from those
// locked (or cannot be read): then Verify needs ConfigDigest. The toolbox
// binary asks before it reads a call's input, to hand the call to
// toolbox-core.
func (c *ToolboxFileCheck) BytesChanged() bool { return c.hashed() != nil }

// Verify is VerifyToolboxFile from c's one hash, reached once: later
// calls return the first one's result.
func (c *ToolboxFileCheck) Verify() error {
	c.verifyOnce.Do(func() { c.verifyErr = c.verify() })
	return c.verifyErr
}

func (c *ToolboxFileCheck) verify() error {
	l := c.lock
	err := c.hashed()
	var he *hashError
	if err == nil || !errors.As(err, &he) || he.err != nil {
		// Equal bytes, or the file is gone or unreadable.
		return toolboxFileError(l, err, nil)
	}
	if ConfigDigest == nil {
		return toolboxFileError(l, errors.New("changed"), ErrNeedsConfigParser)
	}
	got, derr := ConfigDigest(c.file)
	switch {
	case derr != nil:
		return toolboxFileError(l, fmt.Errorf("changed and does not load (%v)", derr), derr)
	case got != l.File.Config:
		return toolboxFileError(l, fmt.Errorf("changed (configuration sha256 %s, locked %s)", short(got), short(l.File.Config)), nil)
	}
	return nil
}

// toolboxFileError is the refusal of a toolbox file that is not the locked
// one (what reads as a past participle: "changed ..."), wrapping cause.
func toolboxFileError(l *manifest.Lock, what, cause error) error {
	if what == nil {
		return nil
	}
	if cause == nil && errors.Is(what, fs.ErrNotExist) {
		cause = fs.ErrNotExist
	}
	return &RefusedError{
		What: fmt.Sprintf("toolbox file %q %s since the lock", l.File.Path, what),
		Fix:  relockFix,
		Err:  cause,
	}
}
