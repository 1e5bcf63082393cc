package manifest

import (
	"encoding/json"

	"github.com/toolbox-dev/toolbox/protocol"
)

// Tool kinds.
const (
	KindExec   = "exec"
	KindPlugin = "plugin"
	// KindMCP is a tool served by a locked MCP server (Lock.MCPServers);
	// its Tool.MCP says which server and pins its definition.
	KindMCP = "mcp"
)

// FormatVersion is the lock format this program reads and writes. 2 (issue
// 10-14): bwrap pinned, declared paths' resolutions, limits, the builtin
// "process"'s sandbox, multi-command binaries stored once, the toolbox
// file's configuration digest, omit_send, plugin concurrency. 3 (day 5):
// limits.processes_default, the default processes limit locked whoever
// locks (a lock made by root and checked by another user matched no
// longer in format 2).
const FormatVersion = 3

// HeaderText is the sentence every lock carries in Lock.Header (its
// "_comment" key), so that a reader of the file knows who owns it.
const HeaderText = "This file is maintained by `toolbox lock`. Do not edit it by hand."

// New returns an empty lock of the current format: Version and Header set,
// Tools and Capabilities empty but non-nil. The compiler fills in the rest.
func New() *Lock {
	return &Lock{
		Version:      FormatVersion,
		Header:       HeaderText,
		Tools:        map[string]*Tool{},
		Capabilities: map[string]*Capability{},
	}
}

// Lock is the whole toolbox.lock.json (DESIGN.md §4). Maps marshal with
// sorted keys, so the encoding is canonical.
type Lock struct {
	// Version is FormatVersion.
	Version int `json:"version"`
	// Header is a fixed sentence saying the file is maintained by `toolbox lock`.
	Header string `json:"_comment"`
	// File is the toolbox file: its name (relative to the lock), the
	// sha256 of its bytes and the digest of its parsed configuration.
	File FileRef `json:"toolbox_file"`
	// Sandbox is the mechanism the toolbox file (or --sandbox) asked for:
	// "bwrap", "landlock", "auto" or "none".
	Sandbox string `json:"sandbox"`
	// EnvdirRoot is the envdir root as resolved from the toolbox file:
	// relative to the lock's directory unless written absolute; "" when unset.
	EnvdirRoot string `json:"envdir_root,omitempty"`
	// Workspace is the toolbox file's default workspace (its workspace
	// attribute, DESIGN.md §3): a clean slash path relative to the lock's
	// directory unless absolute; "" when unset. It is only a default,
	// below --workspace and $TOOLBOX_WORKSPACE, and resolved at each call
	// (runspec.Trust.WithWorkspace), never here.
	Workspace string `json:"workspace,omitempty"`
	// EnvAllowlist, when non-nil, is the operator's env_allowlist applied to
	// every tool. nil (key absent) means unset; an empty non-nil list (key
	// present, []) means no variable at all is passed, so the tag has no
	// omitempty: Marshal drops the key only when the list is nil.
	EnvAllowlist []string `json:"env_allowlist"`
	// Builtins lists the builtins declared (e.g. "process"), sorted and
	// unique (Marshal sorts them).
	Builtins []string `json:"builtins,omitempty"`
	// Process is the resolved builtin "process" (DESIGN.md §5): how every
	// background command runs. Set exactly when Builtins lists "process".
	Process *ProcessBuiltin `json:"builtin_process,omitempty"`
	// SharedTmpSize is the size in bytes of the toolbox's shared tmp (the
	// tmpfs toolbox mounts on its shared scratch directory where it may
	// mount: DESIGN.md §6, decision D6): the toolbox-wide limits block's
	// tmp_size. nil (key absent) means DefaultSharedTmpSize, so that locks
	// written before the key existed keep their meaning; 0 means
	// unlimited (a plain directory). Read it with SharedTmpBytes.
	SharedTmpSize *uint64 `json:"shared_tmp_size_bytes,omitempty"`
	// BuiltinLimits are the resource limits of a builtin's commands (the
	// key is a builtin of Builtins, e.g. "process").
	BuiltinLimits map[string]*Limits `json:"builtin_limits,omitempty"`
	// Bwrap pins the bubblewrap binary that runs every tool (and the
	// builtin "process") locked with mechanism "bwrap" (DESIGN.md §4, §6):
	// present exactly when one is. A run executes this path and nothing
	// else (PATH is never searched again), after checking its sha256 from
	// the descriptor it executes.
	Bwrap *Pin `json:"bwrap,omitempty"`
	// MCPServers are the locked MCP servers (the toolbox file's mcp_server
	// blocks) by name: how each is started and what it announced. Their
	// tools are in Tools, of kind KindMCP. nil or empty when there are none.
	MCPServers   map[string]*MCPServer  `json:"mcp_servers,omitempty"`
	Tools        map[string]*Tool       `json:"tools"`
	Capabilities map[string]*Capability `json:"capabilities"`
	// OtherPaths are the binary paths (lock-relative, as Tool.Path) of the
	// tools and binaries a partial read (ReadCall) left out. They are never
	// written: a partial lock still names every binary a later run trusts,
	// so that the call's sandbox protects them all (runspec.NewTrust).
	OtherPaths []string `json:"-"`
}

// BuiltinProcess is the name of the builtin of background commands.
const BuiltinProcess = "process"

// ProcessBuiltin is the resolved builtin "process" of the toolbox file:
// either confined (Sandbox set, Mechanism bwrap or landlock, what the
// operator's mechanism chose for the declaration) or, only when the
// toolbox file says unconfined = true, Unconfined with Mechanism "none".
// Every background command runs as `bash -c CMD` under it.
//
// Limits of the toolbox file's limits block (D5) belong here beside
// Sandbox once they exist, resolved as a tool's are.
type ProcessBuiltin struct {
	// Unconfined: commands run unsandboxed, as the user of toolbox serve
	// or mcp, with the caller's environment.
	Unconfined bool `json:"unconfined,omitempty"`
	// Mechanism is "bwrap" or "landlock", or "none" when Unconfined.
	Mechanism string `json:"mechanism"`
	// Sandbox is the declaration with its defaults filled in (net "host"
	// or "none", tmp "shared" or "private"); its fs paths are slash paths
	// relative to the lock's directory (the toolbox file's) unless
	// absolute. nil when Unconfined.
	Sandbox *protocol.Sandbox `json:"sandbox,omitempty"`
}

// FileRef names the toolbox file relative to the lock and pins its
// configuration (DESIGN.md §4).
type FileRef struct {
	Path string `json:"path"`
	// SHA256 is the hex sha256 of the file's bytes when it was locked: a
	// fast path (equal bytes need no parsing). Bytes that differ are not a
	// change by themselves; Config decides.
	SHA256 string `json:"sha256"`
	// Config is the hex sha256 of the canonical encoding of the parsed
	// configuration (compiler.ConfigDigest): what the lock pins, so that a
	// comment or `toolbox fmt` needs no new lock.
	Config string `json:"config_sha256"`
}

// Pin names a program outside the toolbox by its absolute path (every
// symlink resolved at lock time) and pins its content (hex sha256).
type Pin struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Tool is one locked tool.
type Tool struct {
	// Kind is KindExec, KindPlugin or KindMCP.
	Kind string `json:"kind"`
	// Path of the binary, relative to the lock's directory (slash-separated).
	// Empty for KindMCP: the server's MCPServer holds its command.
	Path string `json:"path,omitempty"`
	// SHA256 is the hex sha256 of the binary; empty for KindMCP.
	SHA256 string `json:"sha256,omitempty"`
	// Platform is GOOS/GOARCH of the machine that locked it.
	Platform string `json:"platform"`
	// Protocol is the tool protocol of its describe document (1 or 2); at
	// least 1 whenever Describe is set.
	Protocol int `json:"protocol"`
	// PluginProtocol is the plugin protocol version negotiated with a
	// plugin tool at lock time (plugins.ProtocolVersion); 0 for exec tools.
	PluginProtocol int `json:"plugin_protocol,omitempty"`
	// Command is set for a tool that is one command of a multi-command
	// binary, with Binary: the binary's name in the toolbox file. Every
	// tool of one Binary holds the same fields but Command, and one
	// Describe holding all their commands; the lock stores those fields
	// once, under "binaries", and each command's own part with its tool
	// (see binaries.go), hence no JSON tags here.
	Command string `json:"-"`
	Binary  string `json:"-"`
	// Describe is the validated describe document. It is required unless
	// Probe.Status is StatusFailed or StatusSkipped (a tool whose describe
	// could not run has none), and absent for KindMCP.
	Describe *protocol.Describe `json:"describe,omitempty"`
	// MCP is set exactly for KindMCP: the server that serves the tool and
	// its pinned definition.
	MCP *MCPTool `json:"mcp,omitempty"`
	// Bindings are the operator's bound arguments, by arg name.
	Bindings map[string]*Binding `json:"bindings,omitempty"`
	// OmitSend is the operator's `send = false`: the service's send
	// companion is left out of what models see (list, schema, MCP).
	OmitSend bool `json:"omit_send,omitempty"`
	// Runtime is what the launcher applies, resolved at lock time.
	Runtime Runtime `json:"runtime"`
	// Probe is the result of describe/check at lock time.
	Probe Probe `json:"probe"`
}

// Runtime is the resolved runtime of a tool.
type Runtime struct {
	// Mechanism is "none", "bwrap" or "landlock" (what auto chose).
	Mechanism string `json:"mechanism"`
	// RunAs is the resolved identity, nil to run as the caller.
	RunAs *Identity `json:"run_as,omitempty"`
	// Envdir is the envdir, relative to the lock's directory unless the
	// operator gave an absolute envdir_root; "" when none.
	Envdir string `json:"envdir,omitempty"`
	// Rundir is the working directory, relative to the lock's directory
	// (resolved from the describe document's rundir); "" for the caller's.
	// A rundir naming the workspace is kept as declared, cleaned
	// ("{workspace}/src"), and resolved at each call.
	Rundir string `json:"rundir,omitempty"`
	// TimeoutSeconds is the operator's default call timeout (0 = the program default).
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// Concurrency is how many calls one warm process of a plugin serves at
	// once in `toolbox mcp` and `serve` (DESIGN.md §5): the operator's
	// `concurrency`, else the plugin's runtime.concurrency; 0 means 1.
	// Exec tools run each call in a process of its own and never have it.
	Concurrency int `json:"concurrency,omitempty"`
	// Limits are the tool's resource limits (nil = none).
	Limits *Limits `json:"limits,omitempty"`
	// Paths maps every path the describe document declares in
	// runtime.sandbox.fs (read and write, exactly as written) to what it
	// resolved to at lock time: every symlink followed, relative to the
	// lock's directory unless outside it (then absolute). A run opens the
	// resolved path without following any symlink, so a link planted after
	// the lock redirects nothing (DESIGN.md §6). Required for every
	// declared path of a sandboxed tool but those naming the workspace
	// (protocol.WorkspaceToken), which are resolved at each call and
	// never here.
	Paths map[string]string `json:"paths,omitempty"`
}

// Identity is a resolved run_as.
type Identity struct {
	User   string   `json:"user"`
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// Probe statuses (DESIGN.md §2 check, §4).
const (
	StatusOK         = "ok"
	StatusFailed     = "failed"
	StatusUnverified = "unverified"
	StatusSkipped    = "skipped"
)

// Probe is a probe result. No timings: the lock must be byte-identical for
// identical inputs.
type Probe struct {
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Capability is one locked capability.
type Capability struct {
	Description string   `json:"description,omitempty"`
	Backends    []string `json:"backends"`
	Required    bool     `json:"required,omitempty"`
	// Active is the first backend whose probe is ok, else the first
	// unverified, else "".
	Active string `json:"active,omitempty"`
	// FallbackOn lists exit codes on which a call moves on to the next
	// usable backend (the operator's fallback_on); empty = no fallback.
	FallbackOn []int `json:"fallback_on,omitempty"`
}

// Binding is an argument the operator fixed (partial application): a
// literal Value (JSON) or the caller's environment variable Env read at
// run time, never both. A bound argument is left out of the schema the
// model sees and its value wins over the caller's. Secret bindings are
// only allowed for env and stdin mode args; their values are redacted
// from everything reported about a call (launcher.Redactor).
type Binding struct {
	Value  json.RawMessage `json:"value,omitempty"`
	Env    string          `json:"env,omitempty"`
	Secret bool            `json:"secret,omitempty"`
}

// UsableBackends returns the backends of c that can serve a call, in the
// order they are tried: every backend whose probe is ok, in the
// capability's order, then every unverified one (DESIGN.md §4). The first
// is the active backend; a failed or skipped backend, or one missing from
// tools, never appears. tools is a lock's Tools.
func (c *Capability) UsableBackends(tools map[string]*Tool) []string {
	var out []string
	for _, want := range []string{StatusOK, StatusUnverified} {
		for _, b := range c.Backends {
			if t := tools[b]; t.Callable() && t.Probe.Status == want {
				out = append(out, b)
			}
		}
	}
	return out
}
