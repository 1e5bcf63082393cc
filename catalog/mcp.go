package catalog

import (
	"encoding/json"
	"slices"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// mcpEntry is the entry of a tool served by an MCP server: its locked
// definition's description and input schema, never the server's live
// ones. It runs as a oneshot.
func mcpEntry(name, backend string, t *manifest.Tool) Entry {
	desc, _ := MCPDefinition(t)
	return Entry{
		Name:        name,
		ModelName:   StrictName(name),
		Kind:        KindTool,
		Description: desc.Description,
		Backend:     backend,
		InputSchema: InputSchemaOf(t),
		Mode:        protocol.ProcessOneshot,
		Status:      t.Probe.Status,
	}
}

// Definition is what a model is given of an MCP tool's locked definition.
type Definition struct {
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// MCPDefinition reads the parts of an MCP tool's locked definition
// (manifest.MCPTool.Definition) that a model is given. ok is false when t
// is not an MCP tool or its definition does not decode.
func MCPDefinition(t *manifest.Tool) (d Definition, ok bool) {
	if t == nil || t.MCP == nil {
		return d, false
	}
	return d, json.Unmarshal(t.MCP.Definition, &d) == nil
}

// InputSchemaOf is the JSON Schema of the arguments a model passes to t:
// its describe document's args less the bound ones (protocol.InputSchema),
// or an MCP tool's locked inputSchema (numbers as json.Number, as the
// server wrote them). A fresh value the caller may modify; an MCP tool
// whose schema does not decode gets an object schema that admits nothing.
func InputSchemaOf(t *manifest.Tool) map[string]any {
	if t.Kind == manifest.KindMCP {
		d, _ := MCPDefinition(t)
		if v, err := protocol.DecodeJSON(d.InputSchema); err == nil {
			if m, ok := v.(map[string]any); ok {
				return m
			}
		}
		return map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
	}
	args, _ := t.Describe.CommandArgs(t.Command)
	free := make([]protocol.Arg, 0, len(args))
	for _, a := range args {
		if t.Bindings[a.Name] == nil {
			free = append(free, a)
		}
	}
	return protocol.InputSchema(free)
}

// annotationKeywords are the JSON Schema keywords that only describe:
// SchemaShape leaves them out.
var annotationKeywords = map[string]bool{"title": true, "description": true, "examples": true, "$comment": true}

// SchemaShape is a JSON Schema without its annotations (title,
// description, examples, $comment) at any depth, and with every
// "required" list sorted: what must be identical between the backends of
// one capability, so that a model's arguments mean the same to each of
// them (an exec tool's args compared with an MCP tool's inputSchema).
// Property names are kept even when they are named like a keyword.
func SchemaShape(schema any) any {
	switch s := schema.(type) {
	case map[string]any:
		out := make(map[string]any, len(s))
		for k, v := range s {
			switch {
			case annotationKeywords[k]:
			case k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions" || k == "dependentSchemas":
				if m, ok := v.(map[string]any); ok {
					sub := make(map[string]any, len(m))
					for name, ps := range m {
						sub[name] = SchemaShape(ps)
					}
					out[k] = sub
				} else {
					out[k] = v
				}
			case k == "required":
				out[k] = sortedStrings(v)
			case k == "enum" || k == "const" || k == "default":
				out[k] = v
			default:
				out[k] = SchemaShape(v)
			}
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = SchemaShape(v)
		}
		return out
	}
	return schema
}

// sortedStrings sorts a list of strings ([]any or []string), leaving any
// other value as it is.
func sortedStrings(v any) any {
	var list []string
	switch l := v.(type) {
	case []string:
		list = slices.Clone(l)
	case []any:
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				return v
			}
			list = append(list, s)
		}
	default:
		return v
	}
	slices.Sort(list)
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
