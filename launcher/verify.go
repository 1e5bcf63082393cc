package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Verify checks that the lock at lockPath (l, already read) still describes
// the world for tool, in the order of the cheapest check first (DESIGN.md
// §4): the tool was locked on this platform (manifest.Platform); the
// toolbox file (l.File.Path, relative to the lock's directory) still has
// the locked sha256; the tool's binary (Tool.Path, relative to the lock's
// directory) still has its locked sha256; for a tool of an MCP server, the
// server's executable and entry script (Lock.MCPServers) have theirs. It
// is OpenVerified without keeping the binary open: a caller that runs the
// tool uses OpenVerified.
//
// Every failure is a *RefusedError whose fix is `toolbox lock`. A binary
// that no longer exists also wraps ErrNotFound (exit 127); an unknown tool
// wraps ErrUnknownName.
func Verify(lockPath string, l *manifest.Lock, tool string) error {
	exe, err := OpenVerified(lockPath, l, tool)
	exe.Close()
	return err
}

// OpenVerified is Verify keeping the binary open: it is opened once and
// hashed from that descriptor (sandbox.OpenExecutable), and the returned
// *sandbox.Executable is what must run (sandbox.Command.Exe), so that a
// file swapped in after the check never does (DESIGN.md §6). The caller
// closes it once the tool has started. A binary others could rewrite in
// place is refused (*sandbox.RefusalError naming the file).
func OpenVerified(lockPath string, l *manifest.Lock, tool string) (*sandbox.Executable, error) {
	return openVerified(lockPath, l, tool, nil)
}

// openVerified is OpenVerified checking the toolbox file with tf (nil: a
// check of its own).
func openVerified(lockPath string, l *manifest.Lock, tool string, tf *ToolboxFileCheck) (*sandbox.Executable, error) {
	if err := verifyLock(lockPath, l, tool, tf); err != nil {
		return nil, err
	}
	return OpenBinary(lockPath, l, tool)
}

// verifyLock is Verify without the binary's hash: the tool is in the lock,
// was locked on this platform, and the toolbox file is the locked one
// (checked with tf when it is for l, else by a check of its own).
func verifyLock(lockPath string, l *manifest.Lock, tool string, tf *ToolboxFileCheck) error {
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
	if !tf.isFor(lockPath, l) {
		tf = newToolboxFileCheck(lockPath, l)
	}
	return tf.Verify()
}

// VerifyBinary checks that the binary of tool (in l, at lockPath) still has
// its locked sha256: the part of Verify a warm process repeats when it
// sees the file changed (launcher/pluginrun). Errors as Verify's.
func VerifyBinary(lockPath string, l *manifest.Lock, tool string) error {
	exe, err := OpenBinary(lockPath, l, tool)
	exe.Close()
	return err
}

// OpenBinary opens the binary of tool once and checks its sha256 from that
// descriptor against the lock (the part of OpenVerified a warm process
// repeats each time it starts one); the caller runs and closes the
// returned executable. Errors as Verify's.
func OpenBinary(lockPath string, l *manifest.Lock, tool string) (*sandbox.Executable, error) {
	var t *manifest.Tool
	if l != nil {
		t = l.Tools[tool]
	}
	if t == nil {
		return nil, &RefusedError{What: fmt.Sprintf("tool %q is not in the lock", tool), Fix: relockFix, Err: ErrUnknownName}
	}
	if t.Kind == manifest.KindMCP && t.MCP != nil {
		return OpenMCPServer(lockPath, l, t.MCP.Server)
	}
	bin := filepath.Join(filepath.Dir(lockPath), filepath.FromSlash(t.Path))
	exe, err := openHashed(bin, t.SHA256)
	if err != nil {
		return nil, openRefused(err, fmt.Sprintf("binary %q of tool %q", t.Path, tool), func(r *sandbox.RefusalError) error { return named(tool, r) })
	}
	return exe, nil
}

// openRefused words an error of openHashed for the file named by what
// ("binary %q of tool %q"): a changed, removed or unreadable file is a
// *RefusedError whose fix is `toolbox lock` (wrapping ErrNotFound when it
// is gone), a sandbox refusal is given to refusal, others stay as they are.
func openRefused(err error, what string, refusal func(*sandbox.RefusalError) error) error {
	var r *sandbox.RefusalError
	var he *hashError
	switch {
	case errors.As(err, &r):
		return refusal(r)
	case errors.As(err, &he):
		re := &RefusedError{What: fmt.Sprintf("%s %s since the lock", what, he), Fix: relockFix}
		if errors.Is(err, fs.ErrNotExist) {
			// Most often a built binary (a plugin) a fresh clone has not
			// built yet: relocking would only fail on it.
			re.Err, re.Fix = ErrNotFound, restoreFix
		}
		return re
	}
	return err
}

// openHashed opens the executable bin once (sandbox.OpenExecutable) and
// checks its sha256, from that descriptor, against want. Errors: a
// *sandbox.RefusalError (others could rewrite it), a start error wrapping
// ErrNotExecutable, or a *hashError (changed, removed, unreadable).
func openHashed(bin, want string) (*sandbox.Executable, error) {
	exe, err := sandbox.OpenExecutable(bin)
	var refusal *sandbox.RefusalError
	switch {
	case errors.As(err, &refusal):
		return nil, refusal
	case errors.Is(err, fs.ErrPermission):
		return nil, startError(bin, err) // not executable (exit 126), as exec says
	case err != nil:
		return nil, asHashError(err)
	case exe.SHA256() != want:
		exe.Close()
		return nil, &hashError{what: fmt.Sprintf("changed (sha256 %s, locked %s)", short(exe.SHA256()), short(want))}
	}
	return exe, nil
}

// hashError reads as a past participle after the file's name:
// `toolbox file "x" changed since the lock`.
type hashError struct {
	what string
	err  error
}

func (e *hashError) Error() string { return e.what }
func (e *hashError) Unwrap() error { return e.err }

// asHashError words a failure to open or read a file.
func asHashError(err error) *hashError {
	if errors.Is(err, fs.ErrNotExist) {
		return &hashError{what: "was removed", err: err}
	}
	return &hashError{what: fmt.Sprintf("became unreadable (%v)", err), err: err}
}

// hashFile is manifest.HashFile; tests count hashes through it.
var hashFile = manifest.HashFile

func checkHash(path, want string) error {
	got, err := hashFile(path)
	switch {
	case err != nil:
		return asHashError(err)
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
