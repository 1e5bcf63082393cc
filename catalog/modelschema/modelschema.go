// Package modelschema turns the JSON Schemas toolbox gives a model into the
// forms the strict modes of model APIs accept (issue 12 D): OpenAI's strict
// function calling and Anthropic's strict tool use. Both constrain
// generation with a grammar built from the schema, so each accepts only a
// subset of JSON Schema (their published "supported schemas" pages):
//
//   - every object says additionalProperties false, and is not free-form;
//   - no minimum, maximum, multipleOf, minLength, maxLength, pattern or
//     format, no minItems/maxItems: bounds are moved into the description;
//   - anyOf, not oneOf, allOf, not, if/then/else or dependent keywords;
//     const is written as a one-value enum; enum values are scalars;
//   - OpenAI only: every property is listed in required; an optional one
//     becomes nullable (its type gains "null"), and toolbox takes null for
//     "absent" (protocol.ValidateArgs, the MCP server's built-ins).
//     Anthropic keeps optional properties optional: it caps optional
//     parameters (24 per request) above parameters with type arrays or
//     anyOf (16), so nullable would cost more.
//
// What cannot be expressed in that subset (a free-form object, any JSON
// value, a tuple) is an error naming the place: the caller then gives that
// tool in non-strict form. The package works on decoded JSON (map[string]any
// and []any) and never modifies its input.
package modelschema

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Format names a model API's strict schema form.
type Format string

// The strict forms.
const (
	OpenAI    Format = "openai"
	Anthropic Format = "anthropic"
)

// Strict returns schema, an input schema (a JSON object schema), in the
// strict form of format. Errors say why it cannot be made strict and where
// (a JSON pointer into schema).
func Strict(format Format, schema map[string]any) (map[string]any, error) {
	if format != OpenAI && format != Anthropic {
		return nil, fmt.Errorf("unknown strict format %q (want openai or anthropic)", format)
	}
	if t, _ := schema["type"].(string); t != "object" {
		return nil, fmt.Errorf("the input schema is not an object schema")
	}
	c := converter{format: format}
	out, err := c.node(schema, "", 0)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

type converter struct{ format Format }

// maxDepth is OpenAI's limit of nested object levels.
const maxDepth = 10

// bounds are the keywords neither API takes, said in the description
// instead (in this order).
var bounds = []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems",
	"minProperties", "maxProperties"}

// dropped are annotations left out without a word.
var dropped = map[string]bool{"$schema": true, "$id": true, "$comment": true, "title": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"contentMediaType": true, "contentEncoding": true}

// kept are the keywords the strict forms have (anyOf's and enum's
// content is converted).
var kept = map[string]bool{"type": true, "description": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "enum": true, "anyOf": true}

func (c *converter) node(v any, at string, depth int) (any, error) {
	s, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && !b {
			return nil, fmt.Errorf("%s: a schema that accepts nothing", where(at))
		}
		return nil, fmt.Errorf("%s: accepts any JSON value, which strict mode cannot express", where(at))
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d levels", where(at), maxDepth)
	}
	out := map[string]any{}
	var notes []string
	for _, k := range sortedKeys(s) {
		val := s[k]
		switch {
		case kept[k], dropped[k], k == "oneOf", k == "const":
		case slices.Contains(bounds, k):
			notes = append(notes, fmt.Sprintf("%s %v", k, val))
		default:
			return nil, fmt.Errorf("%s: %q is not in strict mode's subset", where(at), k)
		}
	}
	for _, k := range []string{"type", "description"} {
		if val, ok := s[k]; ok {
			out[k] = val
		}
	}
	if len(notes) > 0 {
		desc, _ := out["description"].(string)
		out["description"] = strings.TrimSpace(desc + " (" + strings.Join(notes, ", ") + ")")
	}
	if val, ok := s["const"]; ok {
		s = withEnum(s, []any{val})
	}
	if val, ok := s["enum"]; ok {
		list, ok := val.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("%s: enum is not a list of values", where(at))
		}
		for _, e := range list {
			switch e.(type) {
			case map[string]any, []any:
				return nil, fmt.Errorf("%s: enum values must be strings, numbers, booleans or null", where(at))
			}
		}
		out["enum"] = slices.Clone(list)
		if _, typed := out["type"]; !typed {
			if t := enumType(list); t != "" {
				out["type"] = t
			}
		}
	}
	alts, hasAlts := s["anyOf"]
	if one, ok := s["oneOf"]; ok {
		if hasAlts {
			return nil, fmt.Errorf("%s: both anyOf and oneOf", where(at))
		}
		alts, hasAlts = one, true // for generation, "one of" is "any of"
	}
	if hasAlts {
		list, ok := alts.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("%s: anyOf is not a list of schemas", where(at))
		}
		if at == "" {
			return nil, fmt.Errorf("the input schema's root is an anyOf")
		}
		conv := make([]any, len(list))
		for i, a := range list {
			var err error
			if conv[i], err = c.node(a, fmt.Sprintf("%s/anyOf/%d", at, i), depth); err != nil {
				return nil, err
			}
		}
		out["anyOf"] = conv
	}
	types := typeList(out["type"])
	if len(types) == 0 && !hasAlts {
		if _, ok := out["enum"]; !ok {
			return nil, fmt.Errorf("%s: no type, enum or anyOf: it accepts any JSON value, which strict mode cannot express", where(at))
		}
	}
	if slices.Contains(types, "object") {
		if err := c.object(s, out, at, depth); err != nil {
			return nil, err
		}
	}
	if slices.Contains(types, "array") {
		items, ok := s["items"]
		if !ok {
			return nil, fmt.Errorf("%s: an array without items", where(at))
		}
		conv, err := c.node(items, at+"/items", depth+1)
		if err != nil {
			return nil, err
		}
		out["items"] = conv
	}
	return out, nil
}

// object converts properties, required and additionalProperties.
func (c *converter) object(s, out map[string]any, at string, depth int) error {
	// An object that declares its properties is closed (additionalProperties
	// false): the model sends only those, which the schema accepted anyway.
	// One that declares none and is not closed takes any keys.
	ap, hasAP := s["additionalProperties"]
	_, hasProps := s["properties"]
	switch {
	case hasAP && ap != true && ap != false:
		return fmt.Errorf("%s: an object whose keys are free (a map), which strict mode cannot express", where(at))
	case !hasProps && ap != false:
		return fmt.Errorf("%s: a free-form object, which strict mode cannot express", where(at))
	}
	props, _ := s["properties"].(map[string]any)
	required := stringList(s["required"])
	conv := map[string]any{}
	var all []string
	for _, name := range sortedKeys(props) {
		p, err := c.node(props[name], at+"/properties/"+name, depth+1)
		if err != nil {
			return err
		}
		if c.format == OpenAI && !slices.Contains(required, name) {
			p = nullable(p.(map[string]any))
		}
		conv[name] = p
		all = append(all, name)
	}
	out["properties"] = conv
	switch c.format {
	case OpenAI:
		out["required"] = toAny(all)
	default:
		var req []string
		for _, r := range required {
			if _, ok := props[r]; ok {
				req = append(req, r)
			}
		}
		out["required"] = toAny(req)
	}
	out["additionalProperties"] = false
	return nil
}

// nullable lets p also be null: null joins its type, its enum, or its
// anyOf.
func nullable(p map[string]any) map[string]any {
	if enum, ok := p["enum"].([]any); ok && !slices.Contains(enum, any(nil)) {
		p["enum"] = append(slices.Clone(enum), nil)
	}
	if alts, ok := p["anyOf"].([]any); ok {
		if _, typed := p["type"]; !typed {
			p["anyOf"] = append(slices.Clone(alts), map[string]any{"type": "null"})
			return p
		}
	}
	types := typeList(p["type"])
	if len(types) > 0 && !slices.Contains(types, "null") {
		p["type"] = toAny(append(types, "null"))
	}
	return p
}

// typeList is a type keyword's value as a list.
func typeList(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		return stringList(t)
	case []string:
		return slices.Clone(t)
	}
	return nil
}

// stringList is a list of strings ([]any from JSON, or []string from Go).
func stringList(v any) []string {
	switch v := v.(type) {
	case []string:
		return slices.Clone(v)
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// enumType is the JSON type all of list's values share, else "".
func enumType(list []any) string {
	t := ""
	for _, e := range list {
		var et string
		switch e.(type) {
		case string:
			et = "string"
		case bool:
			et = "boolean"
		case float64, int, int64:
			et = "number"
		default:
			if _, ok := e.(interface{ String() string }); ok { // json.Number
				et = "number"
			}
		}
		if et == "" || (t != "" && t != et) {
			return ""
		}
		t = et
	}
	return t
}

// withEnum is s with enum set (const becomes a one-value enum).
func withEnum(s map[string]any, enum []any) map[string]any {
	cp := make(map[string]any, len(s)+1)
	for k, v := range s {
		cp[k] = v
	}
	cp["enum"] = enum
	return cp
}

// where names a place in the input schema for errors.
func where(at string) string {
	if at == "" {
		return "the input schema"
	}
	return "the input schema at " + at
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Count returns how many optional properties (not in their object's
// required) and how many properties typed with a type list or anyOf a
// schema has, nested objects included: what Anthropic caps per request.
func Count(schema map[string]any) (optional, unions int) {
	var walk func(s map[string]any)
	walk = func(s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		required := stringList(s["required"])
		for name, p := range props {
			ps, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if !slices.Contains(required, name) {
				optional++
			}
			if _, isList := ps["type"].([]any); isList {
				unions++
			} else if _, alts := ps["anyOf"]; alts {
				unions++
			}
			walk(ps)
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(items)
		}
		if alts, ok := s["anyOf"].([]any); ok {
			for _, a := range alts {
				if as, ok := a.(map[string]any); ok {
					walk(as)
				}
			}
		}
	}
	walk(schema)
	return optional, unions
}
