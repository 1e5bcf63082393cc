package wire

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
)

// Error codes. They are stable: clients branch on them, and the CLI's
// --json output shows them.
const (
	// CodeBadRequest: the request is not JSON, too long, names an unknown
	// op, or misses a field the op needs.
	CodeBadRequest = "bad_request"
	// CodeForbidden: the peer is not the daemon's owner (SO_PEERCRED).
	CodeForbidden = "forbidden"
	// CodeWrongLock: Request.Lock names another lock than the daemon's.
	CodeWrongLock = "wrong_lock"
	// CodeShuttingDown: the daemon is stopping (supervisor.ErrClosed).
	CodeShuttingDown = "shutting_down"
	// CodeTimeout and CodeCanceled: the request's context ended.
	CodeTimeout  = "timeout"
	CodeCanceled = "canceled"
	// CodeFailed: any other failure (the message says which).
	CodeFailed = "failed"
	// CodeNoDaemon is the client's own: nothing listens on the socket
	// (ErrNoDaemon). The daemon never answers it.
	CodeNoDaemon = "no_daemon"

	// The supervisor's sentinels, one code each.
	CodeBadSession       = "bad_session"
	CodeUnknownProcess   = "unknown_process"
	CodeCursorAhead      = "cursor_ahead"
	CodePageTooSmall     = "page_too_small"
	CodeLimit            = "limit"
	CodeNameInUse        = "name_in_use"
	CodeBadName          = "bad_name"
	CodeNotRunning       = "not_running"
	CodeNoInput          = "no_input"
	CodeInvalidEvent     = "invalid_event"
	CodeNotReady         = "not_ready"
	CodeCommandsDisabled = "commands_disabled"
	CodeNotStartable     = "not_startable"

	// The launcher's refusals before launch.
	CodeUnknownTool   = "unknown_tool"
	CodeRefused       = "refused"
	CodeBadArgs       = "bad_args"
	CodeNotFound      = "not_found"
	CodeNotExecutable = "not_executable"
)

// sentinels maps codes to the errors they stand for, in the order Code
// tests them (the first match wins: a refusal of an unknown name is
// unknown_tool, not refused).
var sentinels = []struct {
	code string
	err  error
}{
	{CodeNoDaemon, ErrNoDaemon},
	{CodeShuttingDown, supervisor.ErrClosed},
	{CodeBadSession, supervisor.ErrBadSession},
	{CodeUnknownProcess, supervisor.ErrUnknownProcess},
	{CodeCursorAhead, supervisor.ErrCursorAhead},
	{CodePageTooSmall, supervisor.ErrPageTooSmall},
	{CodeLimit, supervisor.ErrLimit},
	{CodeNameInUse, supervisor.ErrNameInUse},
	{CodeBadName, supervisor.ErrBadName},
	{CodeNotRunning, supervisor.ErrNotRunning},
	{CodeNoInput, supervisor.ErrNoInput},
	{CodeInvalidEvent, supervisor.ErrInvalidEvent},
	{CodeNotReady, supervisor.ErrNotReady},
	{CodeCommandsDisabled, supervisor.ErrCommandsDisabled},
	{CodeNotStartable, supervisor.ErrNotStartable},
	{CodeUnknownTool, launcher.ErrUnknownName},
	{CodeNotFound, launcher.ErrNotFound},
	{CodeNotExecutable, launcher.ErrNotExecutable},
	{CodeTimeout, context.DeadlineExceeded},
	{CodeCanceled, context.Canceled},
}

// Error is a failed request as the daemon answers it. It is also the error
// the Client returns, and errors.Is matches it against the supervisor's
// and launcher's sentinels by its code (errors.Is(err,
// supervisor.ErrUnknownProcess) holds for code unknown_process).
type Error struct {
	// Code is one of the Code* constants.
	Code string `json:"code"`
	// Message says what went wrong and, where there is one, the fix.
	Message string `json:"message"`
	// Process names the process the error is about, when one exists (a
	// start that did not become ready leaves its record behind).
	Process string `json:"process,omitempty"`
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	for _, s := range sentinels {
		if s.code == e.Code && s.err == target {
			return true
		}
	}
	return false
}

// ErrorOf converts an error of the supervisor or the launcher into its wire
// form: the first sentinel it wraps gives the code, *launcher.RefusedError
// is refused, *launcher.ArgError bad_args, anything else failed. A nil err
// gives nil.
func ErrorOf(err error) *Error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	e := &Error{Code: CodeFailed, Message: err.Error()}
	var se *supervisor.StartError
	if errors.As(err, &se) {
		e.Process = se.Process
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			e.Code = s.code
			return e
		}
	}
	var re *launcher.RefusedError
	var ae *launcher.ArgError
	switch {
	case errors.As(err, &re):
		e.Code = CodeRefused
	case errors.As(err, &ae):
		e.Code = CodeBadArgs
	}
	return e
}

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
