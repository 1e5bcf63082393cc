package validate

import (
	"encoding/json"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

var schemaArgs = []protocol.Arg{
	{Name: "path", Description: "File to read.", Type: "path", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional},
	{Name: "count", Description: "How many.", Type: "int", BackingType: "integer", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashSpace},
	{Name: "ratio", BackingType: "number", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashEqual},
	{Name: "verbose", BackingType: "boolean", Arity: protocol.ArityOptional, Mode: protocol.ModeEnv},
	{Name: "text", BackingType: "string", Arity: protocol.ArityOptional, Mode: protocol.ModeStdin},
}

// TestInputSchemaAgreesWithValidateArgs checks the model's view against the
// launcher's checks: the schema, compiled, accepts what ValidateArgs
// accepts, but for what ValidateArgs takes beyond it on purpose (a quoted
// number or boolean, as agents-exe does; null for an absent optional arg,
// which strict model APIs send): the model is told the stricter form.
func TestInputSchemaAgreesWithValidateArgs(t *testing.T) {
	raw, err := json.Marshal(protocol.InputSchema(schemaArgs))
	if err != nil {
		t.Fatal(err)
	}
	v, err := CompileEventSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	lenient := map[string]bool{`{"path":"a","count":"1"}`: true, `{"path":"a","verbose":"true"}`: true, `{"path":"a","ratio":null}`: true}
	for _, in := range []string{
		`{"path":"a"}`, `{}`, `{"path":"a","count":"1"}`, `{"path":"a","count":1.5}`, `{"path":"a","count":"1.5"}`,
		`{"path":"a","verbose":"true"}`, `{"path":"a","verbose":"yes"}`, `{"path":"a","ratio":null}`,
		`{"path":"a","x":1}`, `{"path":"a","count":2,"ratio":1,"verbose":true,"text":"t"}`,
	} {
		values, err := protocol.DecodeArgs([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		_, schemaErr := v.Validate([]byte(in))
		validateErr := protocol.ValidateArgs(schemaArgs, values)
		if lenient[in] {
			if schemaErr == nil || validateErr != nil {
				t.Errorf("%s: schema says %v, ValidateArgs says %v; want only ValidateArgs to accept it", in, schemaErr, validateErr)
			}
			continue
		}
		if (schemaErr == nil) != (validateErr == nil) {
			t.Errorf("%s: schema says %v, ValidateArgs says %v", in, schemaErr, validateErr)
		}
	}
}
