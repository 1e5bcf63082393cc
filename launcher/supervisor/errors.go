package supervisor

import (
	"errors"
	"fmt"
)

// Sentinels for errors.Is. Every error the Supervisor returns wraps one of
// these, a launcher error (*launcher.RefusedError, *launcher.ArgError,
// launcher.ErrNotFound, launcher.ErrNotExecutable), or a context error.
var (
	// ErrUnknownProcess: no process with that id (or name) in the session.
	ErrUnknownProcess = errors.New("no such process")
	// ErrCursorAhead: an output or inbox cursor beyond the head.
	ErrCursorAhead = errors.New("cursor beyond the head")
	// ErrPageTooSmall: the page size cannot hold the next UTF-8 character.
	ErrPageTooSmall = errors.New("page too small")
	// ErrLimit: a start over a limit; the error is a *LimitError.
	ErrLimit = errors.New("process limit reached")
	// ErrNameInUse: a background command's name belongs to a process that
	// has not finished.
	ErrNameInUse = errors.New("name in use")
	// ErrBadName: a background command's name is not [a-z0-9-]{1,63}.
	ErrBadName = errors.New("invalid name")
	// ErrBadSession: a session id that is empty, longer than 128 bytes or
	// holds control characters.
	ErrBadSession = errors.New("invalid session id")
	// ErrNotRunning: send to a process that is not running.
	ErrNotRunning = errors.New("process not running")
	// ErrNoInput: send to a process whose tool declares no process.input.
	ErrNoInput = errors.New("process reads no events")
	// ErrInvalidEvent: a sent event that is not JSON, breaks the declared
	// input.event schema, or cannot be framed.
	ErrInvalidEvent = errors.New("invalid event")
	// ErrNotReady: a started process that did not become ready (it timed
	// out, exited or was stopped first); the error is a *StartError.
	ErrNotReady = errors.New("process not ready")
	// ErrCommandsDisabled: RunCommand while the lock does not declare
	// builtin "process".
	ErrCommandsDisabled = errors.New("background commands are not enabled")
	// ErrClosed: the Supervisor was closed.
	ErrClosed = errors.New("supervisor closed")
	// ErrNotStartable: a tool that is not a service or stream exec tool.
	ErrNotStartable = errors.New("tool cannot be started")
	// ErrNoRecord: a process record could not be written to the state dir
	// (a full disk, say): a start refused before anything ran, or a
	// *RecordError.
	ErrNoRecord = errors.New("process record not written")
)

// RecordError is returned with a valid result (the Handle or Status) when
// the operation happened but the process's latest record could not be
// written to the state dir, even in place: a supervisor started after a
// crash would show an older state. The supervisor retries the write every
// recordRetry until it lands, and the process's Status.Notes say so
// meanwhile.
type RecordError struct {
	Process string
	// State is the state the record could not hold.
	State State
	Err   error
}

// Error says what happened, what was not written, and the fix.
func (e *RecordError) Error() string {
	return fmt.Sprintf("process %s is %s, but its record could not be written to the state dir: %v; free space there (the write is retried every %s)", e.Process, e.State, e.Err, recordRetry)
}

// Unwrap returns ErrNoRecord and the write's error.
func (e *RecordError) Unwrap() []error { return []error{ErrNoRecord, e.Err} }

// LimitError is a start refused by a limit (DESIGN.md §5). Nothing running
// is stopped to make room.
type LimitError struct {
	// Limit names the limit: "live processes per session" or "live
	// processes per host".
	Limit string
	// Max is its value.
	Max int
}

// Error names the limit and the way out.
func (e *LimitError) Error() string {
	return fmt.Sprintf("limit of %d %s reached; stop a process first (nothing running is stopped to make room)", e.Max, e.Limit)
}

// Unwrap returns ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }

// StartError is a start that did not reach ready. The process was started,
// so its record (Process) remains, in its final state, with its output.
type StartError struct {
	Process string
	Tool    string
	// Reason says why, e.g. "not ready within 10s (runtime.timeout.start);
	// its process group was killed".
	Reason string
	Err    error // ErrNotReady, or the context's error
}

// Error names the tool, the process and the reason.
func (e *StartError) Error() string {
	return fmt.Sprintf("starting %q: process %s %s", e.Tool, e.Process, e.Reason)
}

// Unwrap returns ErrNotReady and Err.
func (e *StartError) Unwrap() []error {
	if e.Err == nil || e.Err == ErrNotReady {
		return []error{ErrNotReady}
	}
	return []error{ErrNotReady, e.Err}
}
