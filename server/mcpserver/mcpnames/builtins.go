package mcpnames

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
)

// The input schemas and descriptions of the built-in tools. Their
// arguments are decoded strictly (unknown keys refused, null meaning
// absent), so the schemas say additionalProperties false. They keep to
// what every model API's strict mode accepts (issue 12 D): no minimum,
// maximum, minLength, pattern or oneOf (bounds are said in the
// descriptions and enforced by the server), every schema lists
// "required", and no object is free-form (env is a list of NAME=value).

const processesDescription = `Manage the processes this session started (services, background commands): list them, read one's status or output, or stop it. ` +
	`action "list": every process; "status": one process, with the last 4 KiB of its stdout and of its stderr (a stream: its last events), after waiting up to wait_seconds for it to finish (capped at 30; a completion seen so is not mailed again); ` +
	`"output": a page of its output from cursor (absolute byte positions; pass the page's "next" to continue); ` +
	`"tail": the last max bytes; "stop": stop it (its declared cancel, then SIGKILL; force kills at once) and return its final state.`

const processesSchema = `{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["list", "status", "output", "tail", "stop"], "description": "what to do"},
    "process": {"type": "string", "description": "the process id (or a background command's name); required except for list"},
    "cursor": {"type": "integer", "description": "output: the byte position to read from (0 = the start; 0 or more)"},
    "max": {"type": "integer", "description": "output and tail: at most this many bytes (1 to 65536; default 65536)"},
    "wait_seconds": {"type": "number", "description": "status: wait up to this long for the process to finish (0 or more; values above 30 are capped at 30)"},
    "force": {"type": "boolean", "description": "stop: kill at once (SIGKILL) instead of the declared cancel"}
  },
  "required": ["action"],
  "additionalProperties": false
}`

const inboxDescription = `Read this session's mail: service events and process completions, oldest first. ` +
	`Reading consumes nothing: pass the answer's "next" as cursor to get only newer mail.`

const inboxSchema = `{
  "type": "object",
  "properties": {
    "cursor": {"type": "integer", "description": "return mail after this sequence number (0 = from the oldest kept; 0 or more)"},
    "max": {"type": "integer", "description": "at most this many mails (1 to 100; default 100)"}
  },
  "required": [],
  "additionalProperties": false
}`

const commandRunDescription = `Run a shell command in the background. ` +
	`It waits inline up to wait_seconds (default 3; values above 30 are capped at 30; 0 returns at once): when the command finishes in time the answer is its final status with the last 4 KiB of its stdout and of its stderr, and nothing more arrives in the inbox; else it keeps running and its completion arrives in the inbox.`

// commandConfinement tells the model where its background commands run:
// the sandbox of the lock's builtin "process" (paths resolved against the
// lock's directory), or unsandboxed.
func commandConfinement(lockDir string, pb *manifest.ProcessBuiltin) string {
	spec, err := runspec.ProcessSpec(lockDir, pb, nil) // to describe it
	switch {
	case err != nil:
		return "It cannot run: " + err.Error() + "."
	case spec == nil:
		return "It runs unsandboxed with this server's user and environment."
	}
	var b strings.Builder
	b.WriteString("It runs in a sandbox: besides the system directories it may read ")
	b.WriteString(orNothing(spec.Read))
	b.WriteString(" and write ")
	b.WriteString(orNothing(spec.Write))
	if spec.NetNone {
		b.WriteString("; it has no network")
	} else {
		b.WriteString("; it has the network")
	}
	if spec.TmpPrivate {
		b.WriteString("; /tmp is its own")
	}
	b.WriteString(". cwd must lie inside these paths (relative to the workspace; default: the workspace when it does, else the first writable path); its environment holds only PATH, locale and the like, plus env.")
	return b.String()
}

func orNothing(paths []string) string {
	if len(paths) == 0 {
		return "nothing"
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		// A path naming the workspace is the project the server works on.
		out[i] = strings.Replace(p, protocol.WorkspaceToken, "the workspace", 1)
	}
	return strings.Join(out, ", ")
}

const commandRunSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "the shell command line (not empty)"},
    "name": {"type": "string", "description": "optional name to address it by instead of its id: 1 to 63 of a-z, 0-9 and -; reusable once it finished"},
    "label": {"type": "string", "description": "free text shown in lists"},
    "cwd": {"type": "string", "description": "working directory, relative to the workspace (default: the workspace)"},
    "env": {"type": "array", "items": {"type": "string"}, "description": "variables added to the environment, each NAME=value"},
    "timeout_seconds": {"type": "number", "description": "stop it after this long (0 or more; default: no timeout)"},
    "wait_seconds": {"type": "number", "description": "inline wait (default 3; values above 30 are capped at 30; 0 returns at once)"}
  },
  "required": ["command"],
  "additionalProperties": false
}`

const commandStatusDescription = `Status of a background command (or any process of this session): state, exit code, and the last 4 KiB of its stdout and of its stderr. wait_seconds (capped at 30) waits for it to finish first; a completion seen so is not mailed again.`

const commandStatusSchema = `{
  "type": "object",
  "properties": {
    "process": {"type": "string", "description": "the id process_run returned, or the command's name"},
    "wait_seconds": {"type": "number", "description": "wait up to this long for it to finish (0 or more; values above 30 are capped at 30)"}
  },
  "required": ["process"],
  "additionalProperties": false
}`

const commandKillDescription = `Stop a background command (or any process of this session): SIGINT to a command's process group (a service gets its declared cancel), then SIGKILL after a grace period; force kills at once. Returns its final state.`

const commandKillSchema = `{
  "type": "object",
  "properties": {
    "process": {"type": "string", "description": "the id process_run returned, or the command's name"},
    "force": {"type": "boolean", "description": "SIGKILL at once"}
  },
  "required": ["process"],
  "additionalProperties": false
}`

// schemaOf decodes one of the schemas above: a fresh value on each call,
// which the caller may modify.
func schemaOf(text string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		panic(fmt.Sprintf("mcpnames: a built-in schema does not decode: %v", err))
	}
	return m
}

// entryDescription is a catalog entry's description, with what a model
// needs to know about its mode.
func entryDescription(description, mode, name string, hasSend bool) string {
	switch mode {
	case protocol.ProcessService:
		s := description + "\n\nThis is a service: each call starts a new process and returns its handle once it is ready; its events arrive in the inbox."
		if hasSend {
			s += fmt.Sprintf(" Talk to it with %s; list, read or stop it with %s.", MCPName(name)+SendSuffix, ProcessesTool)
		} else {
			s += fmt.Sprintf(" List, read or stop it with %s.", ProcessesTool)
		}
		return s
	case protocol.ProcessStream:
		return description + "\n\nThis is a stream: the call lasts until the tool ends, its events are sent as progress, and the result holds the last events and the count of those left out."
	}
	return description
}
