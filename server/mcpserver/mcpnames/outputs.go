package mcpnames

// The output schemas (MCP outputSchema, JSON Schema 2020-12) of the tools
// whose results are structured: mcpserver's result types and the
// supervisor's JSON (supervisor.Status, Page, InboxPage, SendResult). They
// require only the keys always present and leave others open, so a key
// added later does not make a result invalid. An error result carries a
// Failure (mcpserver.Failure), which clients validate too: orFailure
// admits it beside the success shapes.

const eventSchema = `{"type": "object", "description": "one output event: event when it is valid, else invalid with the raw line and the validation error",
  "properties": {"event": {}, "invalid": {"type": "boolean"}, "raw": {"type": "string"}, "error": {"type": "string"}}}`

const pageSchema = `{"type": "object", "description": "a page of a process's output, by absolute byte cursors",
  "properties": {
    "cursor": {"type": "integer"}, "next": {"type": "integer"}, "earliest": {"type": "integer"}, "head": {"type": "integer"},
    "resumed": {"type": "boolean"}, "note": {"type": "string"},
    "chunks": {"type": "array", "items": {"type": "object", "properties": {"stream": {"type": "string"}, "cursor": {"type": "integer"}, "text": {"type": "string"}}, "required": ["stream", "cursor", "text"]}}
  },
  "required": ["cursor", "next", "chunks"]}`

const statusSchema = `{"type": "object", "description": "a process's status",
  "properties": {
    "process": {"type": "string"}, "tool": {"type": "string"},
    "status": {"type": "string", "enum": ["starting", "running", "stopping", "restarting", "exited", "failed", "stopped", "timed_out", "lost"]},
    "since": {"type": "string"}, "session": {"type": "string"}, "kind": {"type": "string"},
    "capability": {"type": "string"}, "name": {"type": "string"}, "label": {"type": "string"}, "command": {"type": "string"},
    "done": {"type": "boolean"}, "restarts": {"type": "integer"}, "exit_code": {"type": "integer"}, "reason": {"type": "string"},
    "pid": {"type": "integer"}, "started": {"type": "string"}, "ended": {"type": "string"},
    "output": {"type": "object", "properties": {"earliest": {"type": "integer"}, "head": {"type": "integer"}}},
    "logs": {"type": "object", "properties": {"stdout": {"type": "string"}, "stderr": {"type": "string"}}},
    "tail": ` + pageSchema + `
  },
  "required": ["process", "tool", "status", "done"]}`

const processListSchema = `{"type": "object", "description": "every process of the session",
  "properties": {"processes": {"type": "array", "items": ` + statusSchema + `}},
  "required": ["processes"]}`

const inboxPageSchema = `{"type": "object", "description": "the session's mail after the cursor, oldest first",
  "properties": {
    "mails": {"type": "array", "items": {"type": "object",
      "properties": {
        "seq": {"type": "integer"}, "time": {"type": "string"}, "from": {"type": "string"}, "process": {"type": "string"},
        "tool": {"type": "string"}, "name": {"type": "string"}, "label": {"type": "string"},
        "kind": {"type": "string", "enum": ["events", "restart", "exit"]},
        "events": {"type": "array", "items": ` + eventSchema + `}, "elided": {"type": "integer"},
        "status": {"type": "string"}, "exit_code": {"type": "integer"}, "reason": {"type": "string"}, "restarts": {"type": "integer"}
      },
      "required": ["seq", "process", "kind"]}},
    "next": {"type": "integer"}, "earliest": {"type": "integer"}, "more": {"type": "boolean"},
    "resumed": {"type": "boolean"}, "note": {"type": "string"}
  },
  "required": ["mails", "next"]}`

const sendResultSchema = `{"type": "object", "description": "what the process answered within the window, or accepted",
  "properties": {
    "process": {"type": "string"}, "status": {"type": "string", "enum": ["answered", "accepted"]},
    "events": {"type": "array", "items": ` + eventSchema + `}, "elided": {"type": "integer"}
  },
  "required": ["process", "status"]}`

const startedSchema = `{"type": "object", "description": "the handle of the started process",
  "properties": {
    "process": {"type": "string"}, "tool": {"type": "string"}, "status": {"type": "string"}, "since": {"type": "string"},
    "capability": {"type": "string"}, "send": {"type": "string"}
  },
  "required": ["process", "tool", "status"]}`

const eventsResultSchema = `{"type": "object", "description": "the tool's events; for a stream the last ones, count saying how many there were",
  "properties": {
    "tool": {"type": "string"}, "backend": {"type": "string"}, "capability": {"type": "string"},
    "exit_code": {"type": "integer"}, "events": {"type": "array", "items": ` + eventSchema + `},
    "count": {"type": "integer"}, "elided": {"type": "integer"}, "truncated": {"type": "boolean"}
  },
  "required": ["tool", "events", "count"]}`

const failureSchema = `{"type": "object", "description": "an error result: what went wrong and the fix, the exit code, the tool's output",
  "properties": {
    "tool": {"type": "string"}, "backend": {"type": "string"}, "capability": {"type": "string"},
    "exit_code": {"type": "integer"}, "timed_out": {"type": "boolean"}, "error": {"type": "string"},
    "output": {"type": "string"}, "stderr_tail": {"type": "string"}
  },
  "required": ["error", "exit_code"]}`

// orFailure is an output schema admitting each shape, or a Failure.
func orFailure(shapes ...string) map[string]any {
	alts := make([]any, 0, len(shapes)+1)
	for _, s := range append(shapes, failureSchema) {
		alts = append(alts, schemaOf(s))
	}
	return map[string]any{"type": "object", "anyOf": alts}
}
