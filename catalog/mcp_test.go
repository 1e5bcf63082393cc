package catalog

import (
	"encoding/json"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

// The schema of an exec tool's args and an MCP tool's inputSchema that
// says the same, in other words, have one shape.
func TestSchemaShape(t *testing.T) {
	exec := protocol.InputSchema([]protocol.Arg{
		{Name: "path", Description: "the file", Type: "path", BackingType: "string", Arity: protocol.AritySingle},
		{Name: "description", Description: "a property named like a keyword", BackingType: "string", Arity: protocol.AritySingle},
		{Name: "end", BackingType: "integer", Arity: protocol.ArityOptional},
	})
	var mcp map[string]any
	if err := json.Unmarshal([]byte(`{"title":"Args","type":"object","additionalProperties":false,
		"required":["description","path"],
		"properties":{"end":{"type":"integer","title":"End"},"path":{"type":"string","examples":["a"]},"description":{"type":"string"}}}`), &mcp); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(SchemaShape(exec))
	b, _ := json.Marshal(SchemaShape(mcp))
	if string(a) != string(b) {
		t.Fatalf("shapes differ:\n%s\n%s", a, b)
	}
	// The property named "description" is kept; a type change is not hidden.
	if want := `{"additionalProperties":false,"properties":{"description":{"type":"string"},"end":{"type":"integer"},"path":{"type":"string"}},"required":["description","path"],"type":"object"}`; string(a) != want {
		t.Errorf("shape %s", a)
	}
	mcp["properties"].(map[string]any)["end"] = map[string]any{"type": "string"}
	if c, _ := json.Marshal(SchemaShape(mcp)); string(c) == string(a) {
		t.Error("a changed type has the same shape")
	}
}
