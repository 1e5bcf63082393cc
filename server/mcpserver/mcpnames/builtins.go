package mcpnames

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolbox-dev/toolbox/protocol"
)

// The input schemas and descriptions of the built-in tools. Their
// arguments are decoded strictly (unknown keys refused, null meaning
// absent), so the schemas say additionalProperties false. They keep to
// what every model API's strict mode accepts (issue 12 D): no minimum,
// maximum, minLength, pattern or oneOf (bounds are said in the
// descriptions and enforced by the server), every schema lists
// "required", and no object is free-form (env is a list of NAME=value).

const processesDescription = `Manage the processes this session started (services, background commands): list them, read one's status or output, or stop it. ` +
	`action "list": every process; "status": one process (wait_seconds waits up to 30 s for it to finish); ` +
	`"output": a page of its output from cursor (absolute byte positions; pass the page's "next" to continue); ` +
	`"tail": the last max bytes; "stop": stop it (its declared cancel, then SIGKILL; force kills at once) and return its final state.`

const processesSchema = `{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["list", "status", "output", "tail", "stop"], "description": "what to do"},
    "process": {"type": "string", "description": "the process id (or a background command's name); required except for list"},
    "cursor": {"type": "integer", "description": "output: the byte position to read from (0 = the start; 0 or more)"},
    "max": {"type": "integer", "description": "output and tail: at most this many bytes (1 to 65536; default 65536)"},
    "wait_seconds": {"type": "number", "description": "status: wait up to this long for the process to finish (0 to 30)"},
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
	`It waits inline up to wait_seconds (default 3, at most 30; 0 returns at once): when the command finishes in time the answer is its final status with the tail of its output, else it keeps running and its completion arrives in the inbox. ` +
	`It runs unsandboxed with this server's user and environment.`

const commandRunSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "the shell command line (not empty)"},
    "name": {"type": "string", "description": "optional name to address it by instead of its id: 1 to 63 of a-z, 0-9 and -; reusable once it finished"},
    "label": {"type": "string", "description": "free text shown in lists"},
    "cwd": {"type": "string", "description": "working directory (default: the server's)"},
    "env": {"type": "array", "items": {"type": "string"}, "description": "variables added to the environment, each NAME=value"},
    "timeout_seconds": {"type": "number", "description": "stop it after this long (0 or more; default: no timeout)"},
    "wait_seconds": {"type": "number", "description": "inline wait (0 to 30; default 3; 0 returns at once)"}
  },
  "required": ["command"],
  "additionalProperties": false
}`

const commandStatusDescription = `Status of a background command (or any process of this session): state, exit code and the tail of its output. wait_seconds (at most 30) waits for it to finish first.`

const commandStatusSchema = `{
  "type": "object",
  "properties": {
    "process": {"type": "string", "description": "the id process_run returned, or the command's name"},
    "wait_seconds": {"type": "number", "description": "wait up to this long for it to finish (0 to 30)"}
  },
  "required": ["process"],
  "additionalProperties": false
}`

const commandKillDescription = `Stop a background command (or any process of this session): SIGTERM to its process group, then SIGKILL after a grace period; force kills at once. Returns its final state.`

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

// sendSchema is the send companion's input schema: the process handle and
// the event, typed with the declared input.event verbatim (a lines input
// without a schema takes a string; a jsonl one any JSON value). A declared
// schema that is not JSON (never so in a lock read from disk) is replaced
// by "any JSON value": the supervisor still checks events against it.
func sendSchema(in *protocol.Input) map[string]any {
	var event any = map[string]any{}
	if in.Framing == protocol.FramingLines {
		event = map[string]any{"type": "string", "description": "one line of text"}
	}
	if len(strings.TrimSpace(string(in.Event))) > 0 {
		if v, err := protocol.DecodeJSON(in.Event); err == nil {
			event = v
		}
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"process": map[string]any{"type": "string", "description": "the handle the start returned"},
			"event":   event,
		},
		"required":             []any{"process", "event"},
		"additionalProperties": false,
	}
}

// sendDescription describes a send companion.
func sendDescription(service string) string {
	return fmt.Sprintf("Send one event to a running %q process (started by calling %s) and return what it answered within a short window, or \"accepted\". "+
		"The event must match the service's declared input schema.", service, MCPName(service))
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
