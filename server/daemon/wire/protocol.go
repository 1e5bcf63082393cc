package wire

import (
	"encoding/json"
	"time"
)

// Version is the protocol version the daemon reports in Info. It changes
// only when an op or a field changes meaning.
const Version = 1

// MaxRequestBytes bounds one request line; a longer one is refused with
// CodeBadRequest.
const MaxRequestBytes = 4 << 20

// Ops of the protocol. Request says which fields each reads and what its
// result is.
const (
	OpPing         = "ping"
	OpStart        = "start"
	OpSend         = "send"
	OpList         = "list"
	OpStatus       = "status"
	OpOutput       = "output"
	OpTail         = "tail"
	OpStop         = "stop"
	OpWait         = "wait"
	OpInbox        = "inbox"
	OpRunCommand   = "run_command"
	OpCloseSession = "close_session"
)

// Request is one request line. Op selects the operation; every op but ping
// needs Session. The fields each op reads, and its result:
//
//	ping           -                                       → Info
//	start          tool, args, backends, caller_env, lock, → supervisor.Handle
//	               workspace, workspace_from
//	send           process, event                          → supervisor.SendResult
//	list           -                                       → []supervisor.Status
//	status         process, wait_ms                        → supervisor.Status
//	output         process, cursor, max                    → supervisor.Page
//	tail           process, bytes                          → supervisor.Page
//	stop           process, force                          → supervisor.Status
//	wait           process, wait_ms                        → supervisor.Status
//	inbox          cursor, max                             → supervisor.InboxPage
//	run_command    command, caller_env, wait_ms, lock,     → supervisor.Status
//	               workspace, workspace_from
//	close_session  -                                       → {}
//
// Fields an op does not read are ignored.
type Request struct {
	Op      string `json:"op"`
	Session string `json:"session,omitempty"`
	// Process is a process id ("p" and six hex digits) or a background
	// command's name.
	Process string `json:"process,omitempty"`
	// Tool is the tool or capability to start.
	Tool string `json:"tool,omitempty"`
	// Args is the JSON object of the tool's arguments ({} when absent).
	Args json.RawMessage `json:"args,omitempty"`
	// Backends are capability → tool overrides (`--backend`).
	Backends map[string]string `json:"backends,omitempty"`
	// CallerEnv is the client's environment ("K=V" entries), which the
	// tool's or command's environment is built from; absent means the
	// daemon's own.
	CallerEnv []string `json:"caller_env,omitempty"`
	// Lock, when set, is the absolute path of the lock the client means;
	// a daemon serving another lock refuses with CodeWrongLock.
	Lock string `json:"lock,omitempty"`
	// Event is the event to send (any JSON value the tool's input.event
	// accepts).
	Event json.RawMessage `json:"event,omitempty"`
	// Cursor is an output byte cursor (output) or a mail sequence number
	// (inbox; 0 for all).
	Cursor int64 `json:"cursor,omitempty"`
	// Max bounds the answer: bytes of a page (output; ≤ 0 or above 64 KiB
	// means 64 KiB), mails (inbox; ≤ 0 or above 100 means 100).
	Max int `json:"max,omitempty"`
	// Bytes is how much of the end of the output tail returns (≤ 0 means
	// 64 KiB, the most).
	Bytes int `json:"bytes,omitempty"`
	// Force stops with SIGKILL at once.
	Force bool `json:"force,omitempty"`
	// WaitMS is an inline wait in milliseconds. status: wait until the
	// process finishes, at most this long (0: answer at once; capped at
	// 30 s). wait: at most this long (0: until it finishes). run_command:
	// 0 means the default (3 s), negative answers at once, capped at 30 s.
	WaitMS int64 `json:"wait_ms,omitempty"`
	// Command is the background command of run_command.
	Command *Command `json:"command,omitempty"`
	// Workspace is the workspace the client chose for a start or a
	// background command (absolute), WorkspaceFrom where it came from
	// ("--workspace" or "$TOOLBOX_WORKSPACE", runspec.WorkspaceSource).
	// Absent: the daemon's own workspace (serve's --workspace, its
	// $TOOLBOX_WORKSPACE, the toolbox file's default, else its directory).
	Workspace     string `json:"workspace,omitempty"`
	WorkspaceFrom string `json:"workspace_from,omitempty"`
}

// Command is a background shell command (supervisor.Command on the wire).
type Command struct {
	// Cmd is the shell command line. Required.
	Cmd string `json:"cmd"`
	// Name, optional, is [a-z0-9-]{1,63}; Label is free text.
	Name  string `json:"name,omitempty"`
	Label string `json:"label,omitempty"`
	// Cwd is the working directory: absolute, or relative to the call's
	// workspace; "" for the workspace (supervisor.Command.Cwd).
	Cwd string `json:"cwd,omitempty"`
	// Env holds variables added to the caller's environment.
	Env map[string]string `json:"env,omitempty"`
	// TimeoutMS stops the command after this many milliseconds (0: none).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// Response is one response line: OK with Result (the op's JSON result), or
// not OK with Error.
type Response struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Info is the answer of ping: who serves this socket.
type Info struct {
	// Version is the protocol version (Version).
	Version int `json:"version"`
	// PID is the daemon's process id.
	PID int `json:"pid"`
	// StateDir and Socket are where it keeps records and listens.
	StateDir string `json:"state_dir"`
	Socket   string `json:"socket"`
	// Lock is the absolute path of the lock it runs tools from.
	Lock    string    `json:"lock"`
	Started time.Time `json:"started"`
}

// Millis converts d to whole milliseconds for the *MS fields, rounding a
// positive duration below 1 ms up to 1 so that it does not read as "none".
func Millis(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}
