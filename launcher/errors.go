package launcher

import (
	"errors"
	"fmt"
)

// Sentinels for errors.Is. ErrNotFound and ErrNotExecutable come back from
// Run when the tool's binary (or its interpreter) cannot be exec'd;
// ErrUnknownName is wrapped by the *RefusedError of a name that is neither a
// locked tool nor a capability.
var (
	ErrNotFound      = errors.New("tool binary not found")
	ErrNotExecutable = errors.New("tool binary not executable")
	ErrUnknownName   = errors.New("unknown tool or capability")
	// ErrNeedsValidator: the tool declares an output event schema and the
	// Request has no CompileSchema. Nothing was started; the caller may
	// retry with a validator (cmd/toolbox hands the call to toolbox-core).
	ErrNeedsValidator = errors.New("validating its events needs a JSON Schema validator")
	// ErrNeedsPlugin: the tool is a plugin and the Request has no Plugins.
	ErrNeedsPlugin = errors.New("running it needs the plugin host")
)

// Exit codes of `toolbox run` for errors before launch (DESIGN.md §7).
const (
	ExitTimeout       = 124
	ExitFailed        = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// RefusedError is a run refused before launch: the lock is missing or
// disagrees with the world (toolbox file or binary changed, other
// platform), the name is unknown, the tool failed its probe, or it may not
// run as locked (a declared sandbox under mechanism "none"). What says
// what is wrong; Fix says what the operator does about it, usually
// "run `toolbox lock`". Err, when set, is a sentinel or cause for errors.Is.
type RefusedError struct {
	What string
	Fix  string
	Err  error
}

// Error is What, then the fix.
func (e *RefusedError) Error() string {
	if e.Fix == "" {
		return e.What
	}
	return e.What + "; " + e.Fix
}

// Unwrap returns Err.
func (e *RefusedError) Unwrap() error { return e.Err }

// ArgError is an argument problem found before launch (wrong type, unknown
// key, missing required argument): Tool names the locked tool, Err is the
// protocol package's error, which names the argument.
type ArgError struct {
	Tool string
	Err  error
}

// Error names the tool and the problem.
func (e *ArgError) Error() string {
	return fmt.Sprintf("arguments of %q: %v", e.Tool, e.Err)
}

// Unwrap returns Err, so errors.As reaches the protocol package's type.
func (e *ArgError) Unwrap() error { return e.Err }

// ExitCode maps an error returned by Run (or Resolve, Verify) to the exit
// code of `toolbox run` (DESIGN.md §7): 127 when the binary is missing,
// 126 when it cannot be executed, 125 for any other failure before or
// around the launch, 0 for nil. A tool's own exit code is in Result, not
// here.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotFound):
		return ExitNotFound
	case errors.Is(err, ErrNotExecutable):
		return ExitNotExecutable
	default:
		return ExitFailed
	}
}

// relockFix is the fix for anything the lock no longer matches.
const relockFix = "run `toolbox lock` to re-probe and lock the toolbox again"

// restoreFix is the fix for a locked binary that is missing: build or
// restore it where the lock names it (a fresh clone has not built its
// plugins), else drop it from the toolbox and lock.
const restoreFix = "build or restore it at that path (a Go plugin: go build -trimpath, which gives the bytes the lock pins), or, if it is gone on purpose, remove it from the toolbox file and run `toolbox lock`"
