package supervisor

import (
	"encoding/json"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/runspec"
)

// State is where a process is in its life (DESIGN.md §5).
type State string

// The states. A process moves starting → running → stopping → one of the
// final states; with on_exit "restart" it goes through restarting (Status.
// Restarts counts them) back to starting.
const (
	// StateStarting: launched, not ready yet.
	StateStarting State = "starting"
	// StateRunning: ready (a service's ready condition held).
	StateRunning State = "running"
	// StateStopping: a stop was asked for (or a timeout hit) and the
	// declared cancel was sent; SIGKILL follows after runtime.timeout.stop.
	StateStopping State = "stopping"
	// StateRestarting: it exited and will be started again after a backoff
	// (on_exit "restart").
	StateRestarting State = "restarting"
	// StateExited: it exited with code 0 (final).
	StateExited State = "exited"
	// StateFailed: it exited non-zero, never became ready, could not be
	// restarted, or exited while on_exit is "fail"; Reason says which (final).
	StateFailed State = "failed"
	// StateStopped: stopped by a request (Stop, CloseSession, Close) (final).
	StateStopped State = "stopped"
	// StateTimedOut: stopped because runtime.timeout.idle passed without
	// output, or a background command's timeout expired (final).
	StateTimedOut State = "timed_out"
	// StateLost: its supervisor died while it ran; it was not restarted.
	// Its processes normally died with the supervisor; Reason says whether
	// some still run, which Stop then kills (final).
	StateLost State = "lost"
)

// Final reports whether s is a state a process never leaves.
func (s State) Final() bool {
	switch s {
	case StateExited, StateFailed, StateStopped, StateTimedOut, StateLost:
		return true
	}
	return false
}

// Kind says what started a process.
type Kind string

// Kinds of processes.
const (
	KindService Kind = "service" // a service tool of the lock (Start)
	KindStream  Kind = "stream"  // a stream tool of the lock (Start)
	KindCommand Kind = "command" // a background shell command (RunCommand)
)

// CommandTool is Handle.Tool for background commands: the builtin's name.
const CommandTool = "process"

// Handle is what Start returns and what the model holds (the v2 spec's
// {process, tool, status, since}).
type Handle struct {
	// Process is the opaque id ("p" and six hex digits), unique among the
	// records of the state dir.
	Process string `json:"process"`
	// Tool is the locked tool (for a capability, the backend that runs),
	// or CommandTool for a background command.
	Tool string `json:"tool"`
	// Status is the state when the handle was taken.
	Status State `json:"status"`
	// Since is when the process entered Status.
	Since time.Time `json:"since"`
	// Runtime is the runtime it was started with, resolved (user, envdir,
	// mechanism, rundir); nil only for records written before it existed.
	Runtime *Runtime `json:"runtime,omitempty"`
}

// Status is everything known about one process. Its JSON is the Handle's
// keys plus the fields below.
type Status struct {
	Handle
	Session string `json:"session"`
	Kind    Kind   `json:"kind"`
	// Capability is the capability name the process was started by, when
	// it was (Tool is then its backend).
	Capability string `json:"capability,omitempty"`
	// Name and Label are a background command's; Command is its shell
	// command line.
	Name    string `json:"name,omitempty"`
	Label   string `json:"label,omitempty"`
	Command string `json:"command,omitempty"`
	// Done says Status is final.
	Done bool `json:"done"`
	// Restarts counts the restarts so far (on_exit "restart").
	Restarts int `json:"restarts,omitempty"`
	// ExitCode is the last exit code (128+N when signal N ended it); nil
	// while nothing has exited and for lost processes.
	ExitCode *int `json:"exit_code,omitempty"`
	// Reason explains a failed, timed_out, stopped, restarting or lost state.
	Reason string `json:"reason,omitempty"`
	// PID is the process id (and process group id) of the current or last
	// run; under bwrap it is bwrap's, under landlock the helper's.
	PID     int        `json:"pid,omitempty"`
	Started time.Time  `json:"started"`
	Ended   *time.Time `json:"ended,omitempty"`
	// Output gives the cursors of the output ring: pass Earliest (or any
	// cursor up to Head) to Output.
	Output OutputRange `json:"output"`
	// Logs are the full-output log files, when the supervisor keeps them.
	Logs *LogFiles `json:"logs,omitempty"`
	// Stdout and Stderr are the ends of the two streams, each the last
	// TailBytes at most, labelled (Status, Wait, Stop, RunCommand; not
	// List, nor a record of a dead supervisor, whose output is not in
	// memory). A stream tool's stdout is its events: Stdout is then nil and
	// Events holds the newest events instead.
	Stdout *StreamTail `json:"stdout,omitempty"`
	Stderr *StreamTail `json:"stderr,omitempty"`
	// Events (stream tools) are the newest output events, oldest first,
	// within TailBytes of events (at least the newest one); EventCount
	// counts every event it emitted.
	Events     []launcher.Event `json:"events,omitempty"`
	EventCount int              `json:"event_count,omitempty"`
	// Notes are what the supervisor noticed that is neither the state nor
	// the output: a startup line too long to judge against ready.match, a
	// record or log file it could not write.
	Notes []string `json:"notes,omitempty"`
}

// OutputRange is the part of the output the ring still holds.
type OutputRange struct {
	Earliest int64 `json:"earliest"`
	Head     int64 `json:"head"`
}

// LogFiles are the paths of a process's log files (stdout and stderr
// apart), each capped at Config.LogBytes.
type LogFiles struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// StartOptions are the optional inputs of Start. The zero value is fine.
type StartOptions struct {
	// Backends are --backend overrides, capability → tool (launcher.Resolve).
	Backends map[string]string
	// CallerEnv is the environment of the caller the tool's environment is
	// built from (runspec's rules); nil means Config.CallerEnv.
	CallerEnv []string
	// Workspace is the caller's choice of workspace; the zero value means
	// Config.Workspace (see Supervisor.workspace).
	Workspace runspec.Workspace
}

// Command is a background shell command (builtin "process", DESIGN.md §5).
// It runs unsandboxed, as the supervisor's user, with the caller's
// environment: it is an operator opt-in, exactly as powerful as a shell.
type Command struct {
	// Cmd is the command line, run with `bash -c` (or `/bin/sh -c` where
	// there is no bash; see Config.Shell). Required.
	Cmd string
	// Name, optional, is [a-z0-9-]{1,63}: the process can then be
	// addressed by it in the session. A name is refused (ErrNameInUse)
	// while a process of that name is not finished, and reusable once it
	// is; it then means the newest process of that name.
	Name string
	// Label is free text shown in lists.
	Label string
	// Cwd is the working directory: absolute, or relative to the call's
	// workspace (refused when the call has none); "" for the workspace
	// (confined: when inside the sandbox's paths, see runspec.CommandDir).
	// It must exist.
	Cwd string
	// Workspace is the caller's choice of workspace; the zero value means
	// Config.Workspace.
	Workspace runspec.Workspace
	// Env holds variables added to (or overriding) the caller's environment.
	Env map[string]string
	// CallerEnv is the caller's environment; nil means Config.CallerEnv.
	CallerEnv []string
	// Timeout stops the command (CommandCancel, SIGINT, to its group, then
	// SIGKILL after Config.Timing.StopGrace) once it has run this long; the
	// state is then timed_out. 0 means none.
	Timeout time.Duration
	// Wait is the inline wait: RunCommand returns as soon as the command
	// finishes or Wait passes. 0 means DefaultWait; a negative value means
	// return at once; values above MaxWait are MaxWait.
	Wait time.Duration
}

// SendResult is the answer of Send.
type SendResult struct {
	Process string `json:"process"`
	// Status is "answered" when the process emitted events within the
	// window, else "accepted" (the event was written).
	Status string `json:"status"`
	// Events are what it emitted (jsonl: the events, validated; lines and
	// chunks: JSON strings), in order.
	Events []launcher.Event `json:"events,omitempty"`
	// Elided counts events that arrived in the window but were not kept.
	Elided int `json:"elided,omitempty"`
}

// Send answers.
const (
	SendAnswered = "answered"
	SendAccepted = "accepted"
)

// EventValidator checks one event line (JSON text without its newline)
// against a compiled schema; it is the launcher's interface, so the same
// injected compiler (validate.CompileEventSchema) serves both.
type EventValidator = launcher.EventValidator

// Mail kinds.
const (
	// MailEvents: output events of a service (a digest of them).
	MailEvents = "events"
	// MailRestart: a process exited and will be restarted.
	MailRestart = "restart"
	// MailExit: a process reached a final state (its completion), lost
	// included.
	MailExit = "exit"
)

// Mail is one entry of a session's mailbox.
type Mail struct {
	// Seq numbers the session's mails from 1; Inbox cursors are Seqs.
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	// From is "process:" + the process id.
	From    string `json:"from"`
	Process string `json:"process"`
	Tool    string `json:"tool"`
	Name    string `json:"name,omitempty"`
	Label   string `json:"label,omitempty"`
	// Kind is MailEvents, MailRestart or MailExit.
	Kind string `json:"kind"`
	// Events (MailEvents) are the digest's events; Elided counts the
	// events of the digest that were not kept (they are in the output ring).
	Events []launcher.Event `json:"events,omitempty"`
	Elided int              `json:"elided,omitempty"`
	// State, ExitCode, Reason and Restarts describe MailExit and MailRestart.
	State    State  `json:"status,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Restarts int    `json:"restarts,omitempty"`
}

// InboxPage is one answer of Inbox.
type InboxPage struct {
	// Mails are the mails with Seq greater than the cursor, oldest first.
	Mails []Mail `json:"mails"`
	// Next is the cursor to pass next time (the last Seq returned, or the
	// cursor given when there is nothing new).
	Next int64 `json:"next"`
	// Earliest is the Seq of the oldest mail still kept (0 when none).
	Earliest int64 `json:"earliest"`
	// More says more mails follow Next already.
	More bool `json:"more,omitempty"`
	// Resumed says mails after the cursor were dropped (the mailbox is
	// bounded); Note says so in words.
	Resumed bool   `json:"resumed,omitempty"`
	Note    string `json:"note,omitempty"`
}

// rawString is s as a JSON string (the event of lines and chunks framing).
func rawString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
