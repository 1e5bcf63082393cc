package mcpnames

import (
	"encoding/json"
	"testing"

	"github.com/toolbox-dev/toolbox/catalog/modelschema"
)

// TestBuiltinSchemasAreStrict: the built-ins' hand-written input schemas
// are already in Anthropic's strict form (nothing to drop, close or move
// into a description), so every client gets the same schema; OpenAI's
// form only adds required and null.
func TestBuiltinSchemasAreStrict(t *testing.T) {
	for name, text := range map[string]string{
		ProcessesTool: processesSchema, InboxTool: inboxSchema, CommandRunTool: commandRunSchema,
		CommandStatusTool: commandStatusSchema, CommandKillTool: commandKillSchema,
	} {
		in := schemaOf(text)
		got, err := modelschema.Strict(modelschema.Anthropic, in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		a, _ := json.Marshal(in)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Errorf("%s is not strict as written:\n got %s\nstrict %s", name, a, b)
		}
		if _, err := modelschema.Strict(modelschema.OpenAI, in); err != nil {
			t.Errorf("%s (openai): %v", name, err)
		}
	}
}
