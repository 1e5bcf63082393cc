package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/toolbox-dev/toolbox/manifest"
)

// Verify checks that the lock at lockPath (l, already read) still describes
// the world for tool, in the order of the cheapest check first (DESIGN.md
// §4): the tool was locked on this platform (manifest.Platform); the
// toolbox file (l.File.Path, relative to the lock's directory) still has
// the locked sha256; the tool's binary (Tool.Path, relative to the lock's
// directory) still has its locked sha256; for a tool of an MCP server, the
// server's executable and entry script (Lock.MCPServers) have theirs.
//
// Every failure is a *RefusedError whose fix is `toolbox lock`. A binary
// that no longer exists also wraps ErrNotFound (exit 127); an unknown tool
// wraps ErrUnknownName.
func Verify(lockPath string, l *manifest.Lock, tool string) error {
	if l == nil {
		return &RefusedError{What: "no lock", Fix: relockFix}
	}
	t, ok := l.Tools[tool]
	if !ok || t == nil {
		return &RefusedError{What: fmt.Sprintf("tool %q is not in the lock", tool), Fix: relockFix, Err: ErrUnknownName}
	}
	if want := manifest.Platform(); t.Platform != want {
		return &RefusedError{
			What: fmt.Sprintf("tool %q was locked on %q, this is %q", tool, t.Platform, want),
			Fix:  relockFix + " on this machine",
		}
	}
	if err := VerifyToolboxFile(lockPath, l); err != nil {
		return err
	}
	if t.Kind == manifest.KindMCP && t.MCP != nil {
		return VerifyMCPServer(lockPath, l, t.MCP.Server)
	}
	bin := filepath.Join(filepath.Dir(lockPath), filepath.FromSlash(t.Path))
	if err := checkHash(bin, t.SHA256); err != nil {
		r := &RefusedError{
			What: fmt.Sprintf("binary %q of tool %q %s since the lock", t.Path, tool, err),
			Fix:  relockFix,
		}
		if errors.Is(err, fs.ErrNotExist) {
			r.Err = ErrNotFound
		}
		return r
	}
	return nil
}

// hashError reads as a past participle after the file's name:
// `toolbox file "x" changed since the lock`.
type hashError struct {
	what string
	err  error
}

func (e *hashError) Error() string { return e.what }
func (e *hashError) Unwrap() error { return e.err }

func checkHash(path, want string) error {
	got, err := manifest.HashFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &hashError{what: "was removed", err: err}
	case err != nil:
		return &hashError{what: fmt.Sprintf("became unreadable (%v)", err), err: err}
	case got != want:
		return &hashError{what: fmt.Sprintf("changed (sha256 %s, locked %s)", short(got), short(want))}
	}
	return nil
}

// short abbreviates a hex digest for messages.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
