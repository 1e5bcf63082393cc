package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolbox-dev/toolbox/protocol"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// EventValidator checks jsonl events (one JSON value per line) against a
// declared process.output.event or process.input.event schema. The zero
// value and a nil *EventValidator accept any JSON value. It is safe for
// concurrent use.
type EventValidator struct {
	schema *jsonschema.Schema // nil: any JSON value
}

// CompileEventSchema compiles a declared event schema (a JSON Schema object
// or boolean; draft 2020-12 unless it says otherwise with $schema). nil,
// empty or white-space-only raw gives a validator that accepts any JSON
// value. External references ($ref or $schema to anything but the standard
// meta-schemas) are refused: nothing is read from files or the network.
// A schema beyond MaxEventSchemaDepth or MaxEventSchemaBytes is refused.
// Compiling costs far more than Validate, so the outcome is cached for the
// life of the process, keyed by the bytes of raw: a server that runs a
// tool many times compiles its schema once. The returned validator may be
// shared between callers; it is safe for concurrent use.
func CompileEventSchema(raw json.RawMessage) (*EventValidator, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &EventValidator{}, nil
	}
	return cachedCompile(raw, func() (*EventValidator, error) { return compileEventSchema(raw) })
}

func compileEventSchema(raw json.RawMessage) (*EventValidator, error) {
	doc, err := protocol.DecodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("compiling event schema: not JSON: %w", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("compiling event schema: want a JSON Schema (an object or a boolean), got %s", protocol.JSONKind(doc))
	}
	if msg := schemaLimitProblem(doc); msg != "" {
		return nil, fmt.Errorf("compiling event schema: %s", msg)
	}
	if probs := numberProblems(doc, nil); len(probs) > 0 {
		return nil, fmt.Errorf("compiling event schema: %s", probs[0])
	}
	sch, err := compileSchemaValue(doc)
	if err != nil {
		var sverr *jsonschema.SchemaValidationError
		var verr *jsonschema.ValidationError
		if errors.As(err, &sverr) && errors.As(sverr.Err, &verr) {
			msgs := make([]string, 0, 1)
			for _, p := range schemaProblems(verr, nil, nil) {
				msgs = append(msgs, p.String())
			}
			return nil, fmt.Errorf("compiling event schema: not a valid JSON Schema: %s", strings.Join(msgs, "; "))
		}
		return nil, fmt.Errorf("compiling event schema: %w", err)
	}
	return &EventValidator{schema: sch}, nil
}

// Validate parses one jsonl line (without its newline; a trailing "\r" and
// surrounding white space are allowed) and validates it. It returns the
// decoded value (numbers as json.Number) even when the value fails the
// schema, so that an invalid event can still be delivered with its error.
// The error says why: the JSON syntax error, or the schema's first error
// with its location in the event, e.g.
// `event does not match its schema: /count: want integer, got string`.
func (v *EventValidator) Validate(line []byte) (any, error) {
	val, err := protocol.DecodeJSON(line)
	if err != nil {
		return nil, fmt.Errorf("event is not JSON: %w", err)
	}
	if v == nil || v.schema == nil {
		return val, nil
	}
	if mayHoldNumberProblem(line) {
		if probs := numberProblems(val, nil); len(probs) > 0 {
			return val, fmt.Errorf("event cannot be checked: %s", probs[0])
		}
	}
	if err := validateSafely(v.schema, val); err != nil {
		var verr *jsonschema.ValidationError
		if errors.As(err, &verr) {
			if probs := schemaProblems(verr, nil, nil); len(probs) > 0 {
				return val, fmt.Errorf("event does not match its schema: %s", probs[0])
			}
		}
		return val, fmt.Errorf("event does not match its schema: %w", err)
	}
	return val, nil
}
