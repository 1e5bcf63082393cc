package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/catalog/modelschema"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// SchemaOptions are the inputs of the schema command.
type SchemaOptions struct {
	*Globals
	// Format is mcp (the default: the schemas the MCP server gives),
	// openai or anthropic (their strict forms).
	Format string
}

// NewCmdSchema builds the schema command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdSchema(g *Globals, runF func(*SchemaOptions) error) *cobra.Command {
	opts := &SchemaOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the tool definitions a model is given (name, description, input schema) as JSON",
		Long: `schema prints, from the lock, every tool a model is given over MCP (the
capabilities and tools, the send companions of services, the built-ins) as a
JSON array.

--format mcp (the default): {name, description, inputSchema, outputSchema}
as the MCP server serves them in tools/list (outputSchema only where the
result is structured).

--format openai: OpenAI function tools in strict mode,
{"type": "function", "function": {name, description, parameters, "strict": true}};
--format anthropic: Anthropic tools in strict mode,
{name, description, input_schema, "strict": true}. Their schemas keep to what
those strict modes accept: additionalProperties false everywhere, no bounds
(said in descriptions instead), anyOf instead of oneOf; for OpenAI every
property is required and the optional ones are nullable (null means absent:
toolbox run and mcp take it so). A schema that cannot be made strict is
given with "strict": false and a warning.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch opts.Format {
			case "mcp", string(modelschema.OpenAI), string(modelschema.Anthropic):
			default:
				return &UsageError{Err: fmt.Errorf("--format %q: want mcp, openai or anthropic", opts.Format)}
			}
			if runF != nil {
				return runF(opts)
			}
			return schemaRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "mcp", "mcp, openai (strict function calling) or anthropic (strict tool use)")
	return cmd
}

// mcpTool is a tool definition of --format mcp, keyed as the MCP
// specification's Tool (inputSchema, outputSchema): what tools/list of
// toolbox mcp serves, so that a client's code reads both alike.
type mcpTool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
}

// openAITool is an OpenAI (Chat Completions) function tool.
type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
	Strict      bool           `json:"strict"`
}

// anthropicTool is an Anthropic Messages API tool.
type anthropicTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
	Strict      bool           `json:"strict"`
}

// Anthropic's per-request limits of strict tool use (its structured
// outputs page): strict tools, optional parameters, and parameters typed
// with a type list or anyOf, across every strict tool of a request.
const (
	anthropicMaxStrictTools = 20
	anthropicMaxOptional    = 24
	anthropicMaxUnions      = 16
)

func schemaRun(opts *SchemaOptions) error {
	_, l, err := loadCatalog(opts.Globals)
	if err != nil {
		return err
	}
	defs := mcpnames.Definitions(l, filepath.Dir(manifest.LockPath(opts.ToolboxFile())))
	format := modelschema.Format(opts.Format)
	var out []any
	strictTools, optional, unions := 0, 0, 0
	for _, d := range defs {
		if opts.Format == "mcp" {
			out = append(out, mcpTool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema})
			continue
		}
		schema, serr := modelschema.Strict(format, d.InputSchema)
		strict := serr == nil
		if !strict {
			fmt.Fprintf(opts.IO.Err, "warning: tool %q: %v; it is given with \"strict\": false\n", d.Name, serr)
			schema = d.InputSchema
		}
		if format == modelschema.OpenAI {
			out = append(out, openAITool{Type: "function", Function: openAIFunction{Name: d.Name, Description: d.Description, Parameters: schema, Strict: strict}})
			continue
		}
		out = append(out, anthropicTool{Name: d.Name, Description: d.Description, InputSchema: schema, Strict: strict})
		if strict {
			strictTools++
			o, u := modelschema.Count(schema)
			optional, unions = optional+o, unions+u
		}
	}
	if strictTools > anthropicMaxStrictTools || optional > anthropicMaxOptional || unions > anthropicMaxUnions {
		fmt.Fprintf(opts.IO.Err, "note: Anthropic takes at most %d strict tools, %d optional parameters and %d parameters with a type list or anyOf per request; these %d tools have %d and %d: set \"strict\": true on the ones that matter most\n",
			anthropicMaxStrictTools, anthropicMaxOptional, anthropicMaxUnions, strictTools, optional, unions)
	}
	if out == nil {
		out = []any{}
	}
	return WriteJSON(opts.IO.Out, out)
}
