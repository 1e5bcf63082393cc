package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

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
// failure is a *RefusedError whose fix is `toolbox lock`.
func VerifyToolboxFile(lockPath string, l *manifest.Lock) error {
	file := filepath.Join(filepath.Dir(lockPath), filepath.FromSlash(l.File.Path))
	err := checkHash(file, l.File.SHA256)
	var he *hashError
	if err == nil || !errors.As(err, &he) || he.err != nil {
		// Equal bytes, or the file is gone or unreadable.
		return toolboxFileError(l, err, nil)
	}
	if ConfigDigest == nil {
		return toolboxFileError(l, errors.New("changed"), ErrNeedsConfigParser)
	}
	got, derr := ConfigDigest(file)
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

// ToolboxFileBytesChanged says whether the toolbox file's bytes differ from
// those locked (or cannot be read): then VerifyToolboxFile needs
// ConfigDigest. The toolbox binary asks before it reads a call's input, to
// hand the call to toolbox-core.
func ToolboxFileBytesChanged(lockPath string, l *manifest.Lock) bool {
	file := filepath.Join(filepath.Dir(lockPath), filepath.FromSlash(l.File.Path))
	return checkHash(file, l.File.SHA256) != nil
}
