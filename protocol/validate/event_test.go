package validate

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestEventValidatorWithoutSchema(t *testing.T) {
	for _, raw := range []json.RawMessage{nil, {}, json.RawMessage("  \n")} {
		v, err := CompileEventSchema(raw)
		if err != nil {
			t.Fatalf("CompileEventSchema(%q): %v", raw, err)
		}
		for _, line := range []string{`{"a":1}`, `[1,2]`, `"s"`, `3.10`, `null`, "{}\r"} {
			if _, err := v.Validate([]byte(line)); err != nil {
				t.Errorf("Validate(%q) = %v", line, err)
			}
		}
	}
	var nilV *EventValidator
	if got, err := nilV.Validate([]byte(`{"n":1.0}`)); err != nil || !reflect.DeepEqual(got, map[string]any{"n": json.Number("1.0")}) {
		t.Errorf("nil validator: %#v, %v", got, err)
	}
}

func TestEventValidatorValidate(t *testing.T) {
	v, err := CompileEventSchema(json.RawMessage(`{
		"type": "object",
		"required": ["path", "op"],
		"properties": {
			"path": {"type": "string", "minLength": 1},
			"op": {"enum": ["create", "remove"]},
			"size": {"type": "integer", "minimum": 0},
			"tags": {"type": "array", "items": {"type": "string"}}
		},
		"additionalProperties": false
	}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ line, err string }{
		{`{"path":"a","op":"create"}`, ""},
		{`{"path":"a","op":"remove","size":10,"tags":["x"]}` + "\r", ""},
		{`{"path":"a","op":"create","size":1.0}`, ""},
		{``, "event is not JSON: empty input"},
		{`{"path":`, "event is not JSON: unexpected end of input"},
		{`not json`, "event is not JSON: invalid character 'o' in literal null (expecting 'u') (at byte 2)"},
		{`{"path":"a","op":"create"} {}`, "event is not JSON: unexpected data after the JSON value at byte 28"},
		{`{"path":"a"}`, `event does not match its schema: (document): missing required key "op"`},
		{`{"path":"a","op":"move"}`, `event does not match its schema: /op: "move" is not one of create, remove`},
		{`{"path":"a","op":"create","size":-1}`, `event does not match its schema: /size: -1 is below the minimum 0`},
		{`{"path":"a","op":"create","size":"1"}`, `event does not match its schema: /size: want integer, got string`},
		{`{"path":"a","op":"create","tags":["x",2]}`, `event does not match its schema: /tags/1: want string, got number`},
		{`{"path":"","op":"create"}`, `event does not match its schema: /path: must not be empty`},
		{`{"path":"a","op":"create","extra":1}`, `event does not match its schema: /extra: unknown key "extra"`},
		{`[]`, `event does not match its schema: (document): want object, got array`},
	}
	for _, tt := range tests {
		got, err := v.Validate([]byte(tt.line))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("Validate(%s) = %v", tt.line, err)
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("Validate(%s)\n got %v\nwant %s", tt.line, err, tt.err)
		}
		// A JSON line that fails the schema still comes back, to be
		// delivered as an invalid event with its raw line and error.
		if strings.HasPrefix(tt.err, "event does not match") && got == nil {
			t.Errorf("Validate(%s) returned no value", tt.line)
		}
	}
}

func TestCompileEventSchemaErrors(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`{`, "compiling event schema: not JSON: unexpected end of input"},
		{`"object"`, "compiling event schema: want a JSON Schema (an object or a boolean), got a string"},
		{`{"type":"strng"}`, `compiling event schema: not a valid JSON Schema: /type: "strng" is not one of array, boolean, integer, null, number, object, string`},
		{`{"$ref":"file:///etc/passwd"}`, `compiling event schema: failing loading "file:///etc/passwd": external references are not allowed; inline the schema`},
		{`{"$schema":"https://example.com/meta"}`, `external references are not allowed`},
		{`{"pattern":"(("}`, `is not valid regex`},
	}
	for _, tt := range tests {
		_, err := CompileEventSchema(json.RawMessage(tt.raw))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileEventSchema(%s)\n got %v\nwant %s", tt.raw, err, tt.want)
		}
	}
}

func TestEventValidatorBooleanSchemasAndDrafts(t *testing.T) {
	never, err := CompileEventSchema(json.RawMessage(`false`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := never.Validate([]byte(`{}`)); err == nil || !strings.Contains(err.Error(), "no value is allowed") {
		t.Errorf("false schema: %v", err)
	}
	draft7, err := CompileEventSchema(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := draft7.Validate([]byte(`{}`)); err == nil {
		t.Error("draft-07 schema accepted an object without a")
	}
}

func TestEventValidatorConcurrent(t *testing.T) {
	v, err := CompileEventSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				if _, err := v.Validate([]byte(`{"n":1}`)); err != nil {
					t.Error(err)
					return
				}
				if _, err := v.Validate([]byte(`{"n":"x"}`)); err == nil {
					t.Error("accepted a string")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestEventValidatorRefusesNumbersItCannotCheck(t *testing.T) {
	v, err := CompileEventSchema(json.RawMessage(`{"properties":{"n":{"minimum":0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Validate([]byte(`{"n":1e1000100}`))
	want := "event cannot be checked: /n: 1e1000100: exponent out of range; use one between -1000 and 1000"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if got == nil {
		t.Error("the decoded event was not returned")
	}
	if _, err := v.Validate([]byte(`{"n":1e1000}`)); err != nil {
		t.Errorf("1e1000 is within the limit: %v", err)
	}
	long := `{"n":1` + strings.Repeat("0", 1000) + `}`
	if _, err := v.Validate([]byte(long)); err == nil || !strings.Contains(err.Error(), "too long to check") {
		t.Errorf("a 1001-digit number: %v", err)
	}
	if _, err := CompileEventSchema(json.RawMessage(`{"minimum":1e1000001}`)); err == nil || !strings.Contains(err.Error(), "exponent out of range") {
		t.Errorf("schema with a huge minimum: %v", err)
	}
}
