package modelschema

import (
	"encoding/json"
	"strings"
	"testing"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStrict: each strict form of one schema, then what neither can take.
func TestStrict(t *testing.T) {
	in := `{"type": "object", "additionalProperties": false, "required": ["pattern", "event"],
	  "properties": {
	    "pattern": {"type": "string", "minLength": 1, "description": "what to find"},
	    "max": {"type": "integer", "minimum": 1, "maximum": 100},
	    "mode": {"enum": ["a", "b"]},
	    "event": {"oneOf": [
	      {"type": "object", "properties": {"op": {"const": "go"}}, "required": ["op"]},
	      {"type": "string"}
	    ]},
	    "tags": {"type": "array", "items": {"type": "string", "format": "uri"}}
	  }}`
	before := encode(t, decode(t, in))
	src := decode(t, in)

	got, err := Strict(OpenAI, src)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{` +
		`"event":{"anyOf":[{"additionalProperties":false,"properties":{"op":{"enum":["go"],"type":"string"}},"required":["op"],"type":"object"},{"type":"string"}]},` +
		`"max":{"description":"(maximum 100, minimum 1)","type":["integer","null"]},` +
		`"mode":{"enum":["a","b",null],"type":["string","null"]},` +
		`"pattern":{"description":"what to find (minLength 1)","type":"string"},` +
		`"tags":{"items":{"description":"(format uri)","type":"string"},"type":["array","null"]}},` +
		`"required":["event","max","mode","pattern","tags"],"type":"object"}`
	if g := encode(t, got); g != want {
		t.Errorf("openai:\n got %s\nwant %s", g, want)
	}
	if encode(t, src) != before {
		t.Errorf("Strict modified its input")
	}

	got, err = Strict(Anthropic, decode(t, in))
	if err != nil {
		t.Fatal(err)
	}
	want = `{"additionalProperties":false,"properties":{` +
		`"event":{"anyOf":[{"additionalProperties":false,"properties":{"op":{"enum":["go"],"type":"string"}},"required":["op"],"type":"object"},{"type":"string"}]},` +
		`"max":{"description":"(maximum 100, minimum 1)","type":"integer"},` +
		`"mode":{"enum":["a","b"],"type":"string"},` +
		`"pattern":{"description":"what to find (minLength 1)","type":"string"},` +
		`"tags":{"items":{"description":"(format uri)","type":"string"},"type":"array"}},` +
		`"required":["pattern","event"],"type":"object"}`
	if g := encode(t, got); g != want {
		t.Errorf("anthropic:\n got %s\nwant %s", g, want)
	}
	if o, u := Count(got); o != 3 || u != 1 {
		t.Errorf("Count = %d optional, %d unions; want 3, 1", o, u)
	}
}

func TestStrictRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ schema, want string }{
		"any value":   {`{"type": "object", "properties": {"e": {}}, "required": ["e"]}`, "at /properties/e: no type, enum or anyOf: it accepts any JSON value"},
		"map":         {`{"type": "object", "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}}`, "at /properties/env: an object whose keys are free"},
		"free object": {`{"type": "object", "properties": {"o": {"type": "object"}}}`, "at /properties/o: a free-form object"},
		"allOf":       {`{"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}}`, `"allOf" is not in strict mode's subset`},
		"ref":         {`{"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}`, `"$ref" is not in strict mode's subset`},
		"tuple":       {`{"type": "object", "properties": {"a": {"type": "array"}}}`, "an array without items"},
		"no type":     {`{"type": "object", "properties": {"a": {"description": "x"}}}`, "at /properties/a: no type"},
		"not object":  {`{"type": "string"}`, "not an object schema"},
		"enum object": {`{"type": "object", "properties": {"a": {"enum": [{"x": 1}]}}}`, "enum values must be"},
	} {
		_, err := Strict(OpenAI, decode(t, tc.schema))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	if _, err := Strict("gemini", decode(t, `{"type": "object"}`)); err == nil {
		t.Error("an unknown format was accepted")
	}
}
