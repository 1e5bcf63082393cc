package catalog

import (
	"fmt"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// SendSuffix makes a service's send companion: "<name>_send" (the v2
// spec's T.send, mapped for strict clients).
const SendSuffix = "_send"

// SendTool is the send companion of a service entry, as a model sees it:
// present from load for every service that declares process.input, unless
// the operator left it out (`send = false`, manifest.Tool.OmitSend).
type SendTool struct {
	// ModelName is StrictName(entry name) + SendSuffix.
	ModelName   string         `json:"model_name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

// sendTool is the companion of entry name served by t, nil when there is
// none to show.
func sendTool(name string, t *manifest.Tool) *SendTool {
	d := t.Describe
	if t.OmitSend || d.Mode() != protocol.ProcessService || d.Process.Input == nil {
		return nil
	}
	return &SendTool{ModelName: StrictName(name) + SendSuffix, Description: SendDescription(name), InputSchema: SendSchema(d.Process.Input)}
}

// SendSchema is the send companion's input schema: the process handle and
// the event, typed with the declared input.event verbatim (a lines input
// without a schema takes a string; a jsonl one any JSON value). A declared
// schema that is not JSON (never so in a lock read from disk) is replaced
// by "any JSON value": the supervisor still checks events against it.
func SendSchema(in *protocol.Input) map[string]any {
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
		"required":             []string{"process", "event"},
		"additionalProperties": false,
	}
}

// SendDescription describes the send companion of service entry name.
func SendDescription(service string) string {
	return fmt.Sprintf("Send one event to a running %q process (started by calling %s) and return what it answered within a short window, or \"accepted\". "+
		"The event must match the service's declared input schema.", service, StrictName(service))
}
