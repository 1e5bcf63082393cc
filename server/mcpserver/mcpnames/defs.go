package mcpnames

import (
	"github.com/toolbox-dev/toolbox/catalog"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// Definition is one MCP tool of a lock as a model is given it (what
// tools/list answers and `toolbox schema` prints).
type Definition struct {
	Spec
	// Description is what the model reads: an entry's description with a
	// sentence on its mode, or the built-in's.
	Description string
	// InputSchema is the JSON Schema of the arguments (a fresh value the
	// caller may modify).
	InputSchema map[string]any
	// OutputSchema is the JSON Schema of the result's structured content,
	// nil when the result is text. Where set, every result carries
	// structured content: the success shape, or the Failure of an error
	// result (isError), so it admits both.
	OutputSchema map[string]any
}

// Definitions lists the MCP tools of l, sorted by name (Plan), each with
// its description and schemas. lockDir is the lock's directory: the paths
// of a confined builtin "process" are resolved against it for process_run's
// description.
func Definitions(l *manifest.Lock, lockDir string) []Definition {
	specs := Plan(l)
	sends := map[string]bool{}
	for _, sp := range specs {
		if sp.Kind == KindSend {
			sends[sp.Entry.Name] = true
		}
	}
	out := make([]Definition, 0, len(specs))
	for _, sp := range specs {
		d := Definition{Spec: sp}
		switch sp.Kind {
		case KindEntry:
			mode := l.Tools[sp.Entry.Backend].Describe.Mode()
			d.Description = entryDescription(sp.Entry.Description, mode, sp.Entry.Name, sends[sp.Entry.Name])
			d.InputSchema = sp.Entry.InputSchema
			d.OutputSchema = entryOutput(l, sp.Entry.Name, sp.Entry.Backend)
		case KindSend:
			d.Description, d.InputSchema, d.OutputSchema = catalog.SendDescription(sp.Entry.Name), catalog.SendSchema(sp.Input), orFailure(sendResultSchema)
		case KindProcesses:
			d.Description, d.InputSchema = processesDescription, schemaOf(processesSchema)
			d.OutputSchema = orFailure(processListSchema, statusSchema, pageSchema)
		case KindInbox:
			d.Description, d.InputSchema, d.OutputSchema = inboxDescription, schemaOf(inboxSchema), orFailure(inboxPageSchema)
		case KindCommandRun:
			d.Description, d.InputSchema, d.OutputSchema = commandRunDescription+" "+commandConfinement(lockDir, l.Process), schemaOf(commandRunSchema), orFailure(statusSchema)
		case KindCommandStatus:
			d.Description, d.InputSchema, d.OutputSchema = commandStatusDescription, schemaOf(commandStatusSchema), orFailure(statusSchema)
		case KindCommandKill:
			d.Description, d.InputSchema, d.OutputSchema = commandKillDescription, schemaOf(commandKillSchema), orFailure(statusSchema)
		}
		out = append(out, d)
	}
	return out
}

// Result shapes of an entry (ResultOf).
const (
	// ResultText: text (or a binary resource); no output schema.
	ResultText = ""
	// ResultEvents: a jsonl tool's events (mcpserver.EventsResult).
	ResultEvents = "events"
	// ResultStarted: a service's handle (mcpserver.Started).
	ResultStarted = "started"
)

// ResultOf says what a successful call of a locked tool returns: a
// service its handle; a jsonl tool (oneshot or stream) its events, unless
// an empty output becomes a message (empty-result AddMessage); anything
// else text. An MCP tool's result is what its server answered: text, as
// far as its schema goes (its outputSchema is not re-exported).
func ResultOf(t *manifest.Tool) string {
	if t == nil || t.Describe == nil {
		return ResultText
	}
	d := t.Describe
	switch {
	case d.Mode() == protocol.ProcessService:
		return ResultStarted
	case d.Framing() == protocol.FramingJSONL && (d.EmptyResult == nil || d.EmptyResult.Tag != "AddMessage"):
		return ResultEvents
	}
	return ResultText
}

// entryOutput is the output schema of an entry served by backend: the
// same result shape from every backend a capability may switch to (live
// health), else none.
func entryOutput(l *manifest.Lock, name, backend string) map[string]any {
	kind := ResultOf(l.Tools[backend])
	if c := l.Capabilities[name]; c != nil {
		for _, b := range c.Backends {
			if t := l.Tools[b]; t.Callable() && ResultOf(t) != kind {
				return nil
			}
		}
	}
	switch kind {
	case ResultEvents:
		return orFailure(eventsResultSchema)
	case ResultStarted:
		return orFailure(startedSchema)
	}
	return nil
}
