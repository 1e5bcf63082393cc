package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]any
	}{
		{`{}`, map[string]any{}},
		{" \n{ }\n ", map[string]any{}},
		{`{"path":"a.txt","n":12,"f":1.50,"b":true,"z":null}`, map[string]any{
			"path": "a.txt", "n": json.Number("12"), "f": json.Number("1.50"), "b": true, "z": nil}},
		{`{"ünï":"çødé ✓","e":""}`, map[string]any{"ünï": "çødé ✓", "e": ""}},
		{`{"big":123456789012345678901234567890}`, map[string]any{"big": json.Number("123456789012345678901234567890")}},
		// Nested values decode; ValidateArgs refuses them naming the arg.
		{`{"o":{"k":[1]}}`, map[string]any{"o": map[string]any{"k": []any{json.Number("1")}}}},
	}
	for _, tt := range tests {
		got, err := DecodeArgs([]byte(tt.in))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("DecodeArgs(%s) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
}

func TestDecodeArgsErrors(t *testing.T) {
	tests := []struct{ in, arg, want string }{
		{``, "", "arguments: empty input; pass a JSON object, {} for no arguments"},
		{"  \n", "", "arguments: empty input; pass a JSON object, {} for no arguments"},
		{`null`, "", `arguments: got null; pass a JSON object such as {"name": "value"}`},
		{`[1,2]`, "", `arguments: got an array; pass a JSON object such as {"name": "value"}`},
		{`"x"`, "", `arguments: got a string; pass a JSON object such as {"name": "value"}`},
		{`12`, "", `arguments: got a number; pass a JSON object such as {"name": "value"}`},
		{`true`, "", `arguments: got a boolean; pass a JSON object such as {"name": "value"}`},
		{`{"a":1} {"b":2}`, "", "arguments: unexpected data at byte 8, after the JSON object; pass exactly one object"},
		{`{"a":1}x`, "", "arguments: unexpected data at byte 7, after the JSON object; pass exactly one object"},
		{`{"a":1,"a":2}`, "a", `argument "a": given twice; give each argument once`},
		{`{"a":}`, "", "arguments: not JSON: invalid character '}' looking for beginning of value (at byte 4)"},
		{`{"a":1`, "", "arguments: not JSON: unexpected end of input"},
		{`{a:1}`, "", "arguments: not JSON: invalid character 'a' (at byte 1)"},
	}
	for _, tt := range tests {
		_, err := DecodeArgs([]byte(tt.in))
		var ae *ArgError
		if !errors.As(err, &ae) {
			t.Errorf("DecodeArgs(%q) = %v; want an *ArgError", tt.in, err)
			continue
		}
		if ae.Arg != tt.arg || err.Error() != tt.want {
			t.Errorf("DecodeArgs(%q)\n got arg %q: %s\nwant arg %q: %s", tt.in, ae.Arg, err, tt.arg, tt.want)
		}
	}
}

// testArgs declares one argument of each backing type and mode.
var testArgs = []Arg{
	{Name: "path", Description: "File to read.", Type: "path", BackingType: "string", Arity: AritySingle, Mode: ModePositional},
	{Name: "count", Description: "How many.", Type: "int", BackingType: "integer", Arity: ArityOptional, Mode: ModeDashDashSpace},
	{Name: "ratio", Description: "", Type: "", BackingType: "number", Arity: ArityOptional, Mode: ModeDashDashEqual},
	{Name: "verbose", Description: "", Type: "", BackingType: "boolean", Arity: ArityOptional, Mode: ModeEnv},
	{Name: "text", Description: "", Type: "", BackingType: "string", Arity: ArityOptional, Mode: ModeStdin},
}

func TestValidateArgsAccepts(t *testing.T) {
	for _, in := range []string{
		`{"path":"a"}`,
		`{"path":""}`,
		`{"path":12}`,   // a number for a string arg: its JSON text
		`{"path":true}`, // a boolean for a string arg
		`{"path":"a","count":3,"ratio":0.5,"verbose":false,"text":"x\u0000y"}`,
		`{"path":"a","count":3.0,"ratio":-1e-3}`,
		`{"path":"a","count":-9223372036854775808}`,
		`{"path":"a","count":null,"ratio":null,"verbose":null,"text":null}`,
	} {
		values, err := DecodeArgs([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateArgs(testArgs, values); err != nil {
			t.Errorf("ValidateArgs(%s) = %v", in, err)
		}
	}
	if err := ValidateArgs(nil, map[string]any{}); err != nil {
		t.Errorf("no args, no values: %v", err)
	}
	if err := ValidateArgs(nil, nil); err != nil {
		t.Errorf("no args, nil values: %v", err)
	}
}

func TestValidateArgsErrors(t *testing.T) {
	tests := []struct {
		name string
		args []Arg
		in   string
		want []string // every ArgError, in order
	}{
		{"missing required", testArgs, `{}`,
			[]string{`argument "path": missing; it is required: pass "path": a string`}},
		{"null required", testArgs, `{"path":null}`,
			[]string{`argument "path": null; it is required: pass "path": a string`}},
		{"unknown with suggestion", testArgs, `{"path":"a","pth":"b","zzz":1}`, []string{
			`argument "pth": unknown argument (did you mean "path"?); valid arguments: path, count, ratio, verbose, text`,
			`argument "zzz": unknown argument; valid arguments: path, count, ratio, verbose, text`}},
		{"unknown for a tool without args", nil, `{"x":1}`,
			[]string{`argument "x": unknown argument; this tool takes no arguments: pass {}`}},
		{"object", testArgs, `{"path":{"a":1}}`, []string{`argument "path": got an object; pass a string`}},
		{"array", testArgs, `{"path":["a"]}`, []string{`argument "path": got an array; pass a string`}},
		{"integer as string with spaces", testArgs, `{"path":"a","count":" 12"}`,
			[]string{`argument "count": got the string " 12"; pass the number without spaces: 12`}},
		{"integer string not whole", testArgs, `{"path":"a","count":"1.5"}`,
			[]string{`argument "count": got the string "1.5", which is not whole; pass a whole number such as 12`}},
		{"integer string too big", testArgs, `{"path":"a","count":"9223372036854775808"}`,
			[]string{`argument "count": got the string "9223372036854775808"; pass a whole number between -9223372036854775808 and 9223372036854775807`}},
		{"integer word", testArgs, `{"path":"a","count":"many"}`,
			[]string{`argument "count": got the string "many"; pass a whole number such as 12`}},
		{"integer fraction", testArgs, `{"path":"a","count":1.5}`,
			[]string{`argument "count": got 1.5, which is not whole; pass a whole number such as 12`}},
		{"integer too big", testArgs, `{"path":"a","count":9223372036854775808}`,
			[]string{`argument "count": got 9223372036854775808; pass a whole number between -9223372036854775808 and 9223372036854775807`}},
		{"integer boolean", testArgs, `{"path":"a","count":true}`,
			[]string{`argument "count": got a boolean; pass a whole number such as 12`}},
		{"number string with spaces", testArgs, `{"path":"a","ratio":"0.5 "}`,
			[]string{`argument "ratio": got the string "0.5 "; pass the number without spaces: 0.5`}},
		{"number word", testArgs, `{"path":"a","ratio":"half"}`,
			[]string{`argument "ratio": got the string "half"; pass a number such as 1.5`}},
		{"number boolean", testArgs, `{"path":"a","ratio":false}`,
			[]string{`argument "ratio": got a boolean; pass a number such as 1.5`}},
		{"boolean string not JSON", testArgs, `{"path":"a","verbose":"True"}`,
			[]string{`argument "verbose": got the string "True"; pass true`}},
		{"boolean number", testArgs, `{"path":"a","verbose":1}`,
			[]string{`argument "verbose": got a number; pass true or false`}},
		{"NUL in argv", testArgs, `{"path":"a\u0000b"}`,
			[]string{`argument "path": contains a NUL byte, which positional mode cannot pass (argv and environment strings end at NUL); remove it`}},
		{"every problem, declaration order then unknown", testArgs, `{"count":"x","verbose":"yes","extra":1}`, []string{
			`argument "path": missing; it is required: pass "path": a string`,
			`argument "count": got the string "x"; pass a whole number such as 12`,
			`argument "verbose": got the string "yes"; pass true or false`,
			`argument "extra": unknown argument; valid arguments: path, count, ratio, verbose, text`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, err := DecodeArgs([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			err = ValidateArgs(tt.args, values)
			var errs ArgErrors
			if !errors.As(err, &errs) {
				t.Fatalf("got %T %v; want ArgErrors", err, err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
			var first *ArgError
			if !errors.As(err, &first) || first != errs[0] {
				t.Errorf("errors.As(*ArgError) = %v; want the first problem", first)
			}
			if err.Error() != strings.Join(tt.want, "; ") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestValidateArgsGoValues(t *testing.T) {
	// Values built by Go callers (e.g. an MCP SDK that decodes to float64).
	args := []Arg{
		{Name: "i", BackingType: "integer", Arity: ArityOptional, Mode: ModePositional},
		{Name: "n", BackingType: "number", Arity: ArityOptional, Mode: ModePositional},
		{Name: "s", BackingType: "string", Arity: ArityOptional, Mode: ModePositional},
	}
	inv, err := Encode(args, map[string]any{"i": float64(7), "n": float64(0.25), "s": int64(-3)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"7", "0.25", "-3"}; !reflect.DeepEqual(inv.Argv, want) {
		t.Errorf("Argv = %q, want %q", inv.Argv, want)
	}
	inv, err = Encode(args, map[string]any{"i": 5, "n": uint8(2), "s": 1e21})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"5", "2", "1e+21"}; !reflect.DeepEqual(inv.Argv, want) {
		t.Errorf("Argv = %q, want %q", inv.Argv, want)
	}
	for _, bad := range []map[string]any{{"i": 2.5}, {"i": 1e300}, {"s": []string{"x"}}, {"n": "1 "}} {
		if err := ValidateArgs(args, bad); err == nil {
			t.Errorf("ValidateArgs(%v) accepted", bad)
		}
	}
}

// TestValidateArgsQuotedScalars: a string that parses as the declared
// type is accepted, as agents-exe accepts it (issue 12 E); the tool gets
// the value's canonical text.
func TestValidateArgsQuotedScalars(t *testing.T) {
	args := []Arg{
		{Name: "i", BackingType: "integer", Arity: ArityOptional, Mode: ModePositional},
		{Name: "n", BackingType: "number", Arity: ArityOptional, Mode: ModePositional},
		{Name: "b", BackingType: "boolean", Arity: ArityOptional, Mode: ModePositional},
	}
	for in, want := range map[string][]string{
		`{"i":"12","n":"0.5","b":"true"}`:   {"12", "0.5", "true"},
		`{"i":"-3","n":"1e3","b":"false"}`:  {"-3", "1e3", "false"},
		`{"i":"1.2e1","n":"-0","b":"true"}`: {"12", "-0", "true"},
		`{"i":"12.0"}`:                      {"12"},
	} {
		values, err := DecodeArgs([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateArgs(args, values); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		inv, err := Encode(args, values)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !reflect.DeepEqual(inv.Argv, want) {
			t.Errorf("%s: Argv = %q, want %q", in, inv.Argv, want)
		}
	}
}

func TestIntegerText(t *testing.T) {
	tests := []struct {
		in, want string
		why      int
	}{
		{"0", "0", intOK},
		{"-0", "0", intOK},
		{"12", "12", intOK},
		{"-12", "-12", intOK},
		{"12.0", "12", intOK},
		{"1.2e1", "12", intOK},
		{"1200e-2", "12", intOK},
		{"0.0e5", "0", intOK},
		{"1E3", "1000", intOK},
		{"9007199254740993.0", "9007199254740993", intOK},
		{"9223372036854775807", "9223372036854775807", intOK},
		{"-9223372036854775808", "-9223372036854775808", intOK},
		{"9223372036854775808", "", intRange},
		{"1e19", "", intRange},
		{"1e999999999", "", intRange},
		{"1.5", "", intFraction},
		{"1e-1", "", intFraction},
		{"12e-1", "", intFraction},
		{"1e-999999999", "", intFraction},
		{"0e-999999999", "0", intOK},
		{"", "", intNotNumber},
		{"012", "", intNotNumber},
		{"1.", "", intNotNumber},
		{".5", "", intNotNumber},
		{"+1", "", intNotNumber},
		{"1e", "", intNotNumber},
		{"0x10", "", intNotNumber},
		{" 1", "", intNotNumber},
	}
	for _, tt := range tests {
		got, why := integerText(tt.in)
		if got != tt.want || why != tt.why {
			t.Errorf("integerText(%q) = %q, %d; want %q, %d", tt.in, got, why, tt.want, tt.why)
		}
	}
}

func TestInputSchema(t *testing.T) {
	args := []Arg{
		{Name: "path", Description: "File to read.", Type: "path", BackingType: "string", Arity: AritySingle, Mode: ModePositional},
		{Name: "start", Description: "First line.", Type: "integer", BackingType: "integer", Arity: ArityOptional, Mode: ModeDashDashEqual},
		{Name: "ratio", Description: "", Type: "fraction", BackingType: "number", Arity: AritySingle, Mode: ModeEnv},
		{Name: "all", Description: "Show all.", Type: "", BackingType: "boolean", Arity: ArityOptional, Mode: ModeDashDashSpace},
		{Name: "when", Description: "A date.", Type: "date", BackingType: "date", Arity: ArityOptional, Mode: ModeStdin},
	}
	got := InputSchema(args)
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":  map[string]any{"type": "string", "description": "File to read. (path)"},
			"start": map[string]any{"type": "integer", "description": "First line."},
			"ratio": map[string]any{"type": "number", "description": "fraction"},
			"all":   map[string]any{"type": "boolean", "description": "Show all."},
			"when":  map[string]any{"type": "string", "description": "A date."},
		},
		"required":             []string{"path", "ratio"},
		"additionalProperties": false,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("InputSchema =\n%#v\nwant\n%#v", got, want)
	}
	empty := InputSchema(nil)
	b, err := json.Marshal(empty)
	if err != nil || string(b) != `{"additionalProperties":false,"properties":{},"required":[],"type":"object"}` {
		t.Errorf("InputSchema(nil) = %s, %v", b, err)
	}
}
