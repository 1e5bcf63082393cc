package validate

import (
	"github.com/toolbox-dev/toolbox/protocol"

	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// runPathCompiledSchemas is whether the per-call functions compiled the
// describe schemas; TestMain measures it before any test can parse a
// describe document.
var runPathCompiledSchemas bool

func TestMain(m *testing.M) {
	args := []protocol.Arg{{Name: "x", BackingType: "integer", Arity: protocol.ArityOptional, Mode: protocol.ModePositional}}
	values, _ := protocol.DecodeArgs([]byte(`{"x": 1}`))
	_ = protocol.ValidateArgs(args, values)
	_, _ = protocol.Encode(args, values)
	_ = protocol.InputSchema(args)
	_, _ = protocol.ParseCheck([]byte(`{"ok": true}`))
	v, _ := CompileEventSchema(nil)
	_, _ = v.Validate([]byte(`{}`))
	runPathCompiledSchemas = describeSchemasCompiled.Load()
	os.Exit(m.Run())
}

func TestRunPathCompilesNoDescribeSchema(t *testing.T) {
	if runPathCompiledSchemas {
		t.Fatal("DecodeArgs/ValidateArgs/Encode/InputSchema/ParseCheck compiled the describe schemas")
	}
	if _, err := ParseDescribe([]byte(`{"slug":"x","description":"","args":[]}`)); err != nil {
		t.Fatal(err)
	}
	if !describeSchemasCompiled.Load() {
		t.Fatal("ParseDescribe did not compile the schemas (the probe above is broken)")
	}
}

func TestEmbeddedSchemasCompile(t *testing.T) {
	s, err := loadDescribeSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if s.v1 == nil || s.v2 == nil || len(s.raw) != 2 {
		t.Fatalf("incomplete schemas: %+v", s)
	}
}

func TestParseDescribeSingleProblemMessage(t *testing.T) {
	_, err := ParseDescribe([]byte(`{"slug":"x","description":"","args":[
		{"name":"a","description":"","type":"","backing_type":"string","arity":"single","mode":"flag"}]}`))
	want := `describe: /args/0/mode: "flag" is not one of positional, dashdashspace, dashdashequal, stdin, env`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestParseDescribeListsEveryProblem(t *testing.T) {
	doc := `{"protocol":2,"slug":"x","description":"d","args":[
		{"name":"a","description":"","type":"","backing_type":"string","arity":"single","mode":"flag"},
		{"name":"a","description":"","type":"","backing_type":"string","arity":"single","mode":"positional"}],
		"process":{"ready":{"kind":"line","match":"("},"output":{"event":{"type":1}}},
		"runtime":{"timeout":{"stop":-1},"cancel":"SIGKILL"},
		"commands":[{"name":"a b","description":"","args":[]}]}`
	_, err := ParseDescribe([]byte(doc))
	var de *DescribeError
	if !errors.As(err, &de) {
		t.Fatalf("want *DescribeError, got %T %v", err, err)
	}
	wantPrefixes := []string{
		"/args/0/mode: ",
		"/args/1/name: duplicate arg name",
		"/commands/0/name: ",
		"/process/output/event/type: not a valid JSON Schema",
		"/process/ready/match: not a valid Go regular expression",
		"/runtime/cancel: ",
		"/runtime/timeout/stop: -1 is below the minimum 0",
	}
	if len(de.Problems) != len(wantPrefixes) {
		t.Fatalf("got %d problems, want %d:\n%s", len(de.Problems), len(wantPrefixes), strings.Join(de.Problems, "\n"))
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(de.Problems[i], p) {
			t.Errorf("problem %d = %q, want prefix %q", i, de.Problems[i], p)
		}
	}
	if !strings.HasPrefix(err.Error(), "describe: 7 problems:\n  /args/0/mode") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestParseDescribeSortsArrayIndicesNumerically(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"slug":"x","description":"","args":[`)
	for i := 0; i < 12; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"a` + strings.Repeat("x", i) + `","description":"","type":"","backing_type":"","arity":"never","mode":"positional"}`)
	}
	b.WriteString(`]}`)
	_, err := ParseDescribe([]byte(b.String()))
	var de *DescribeError
	if !errors.As(err, &de) || len(de.Problems) != 12 {
		t.Fatalf("got %v", err)
	}
	if !strings.HasPrefix(de.Problems[2], "/args/2/") || !strings.HasPrefix(de.Problems[10], "/args/10/") {
		t.Errorf("not in numeric order:\n%s", strings.Join(de.Problems, "\n"))
	}
}

func TestParseDescribeV1IgnoresV2Keys(t *testing.T) {
	d, err := ParseDescribe([]byte(`{"slug":"x","description":"","args":[],"check":true,
		"process":{"mode":"service"},"runtime":{"sandbox":{}},"commands":[{"name":"c","description":"","args":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Check || d.Process != nil || d.Runtime != nil || d.Commands != nil {
		t.Fatalf("v2 keys leaked into a v1 Describe: %+v", d)
	}
	if d.Mode() != protocol.ProcessOneshot || d.Framing() != "" {
		t.Fatalf("Mode=%q Framing=%q", d.Mode(), d.Framing())
	}
}

func TestDescribeHelpers(t *testing.T) {
	v2 := func(extra string) *protocol.Describe {
		t.Helper()
		d, err := ParseDescribe([]byte(`{"protocol":2,"slug":"x","description":"","args":[` +
			`{"name":"top","description":"","type":"","backing_type":"string","arity":"single","mode":"positional"}]` + extra + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name          string
		d             *protocol.Describe
		proto         int
		framing, mode string
	}{
		{"nil", nil, 1, "", protocol.ProcessOneshot},
		{"zero", &protocol.Describe{}, 1, "", protocol.ProcessOneshot},
		{"v1 explicit", &protocol.Describe{Protocol: 1, Process: &protocol.Process{Mode: protocol.ProcessService}}, 1, "", protocol.ProcessOneshot},
		{"v2 defaults", v2(""), 2, protocol.FramingJSONL, protocol.ProcessOneshot},
		{"v2 empty output", v2(`,"process":{"output":{}}`), 2, protocol.FramingJSONL, protocol.ProcessOneshot},
		{"v2 lines stream", v2(`,"process":{"mode":"stream","output":{"framing":"lines"}}`), 2, protocol.FramingLines, protocol.ProcessStream},
		{"v2 chunks service", v2(`,"process":{"mode":"service","output":{"framing":"chunks"}}`), 2, protocol.FramingChunks, protocol.ProcessService},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.EffectiveProtocol(); got != tt.proto {
				t.Errorf("EffectiveProtocol = %d, want %d", got, tt.proto)
			}
			if got := tt.d.Framing(); got != tt.framing {
				t.Errorf("Framing = %q, want %q", got, tt.framing)
			}
			if got := tt.d.Mode(); got != tt.mode {
				t.Errorf("Mode = %q, want %q", got, tt.mode)
			}
		})
	}
}

func TestCommandArgs(t *testing.T) {
	d, err := ParseDescribe([]byte(`{"protocol":2,"slug":"git","description":"","args":[],"commands":[
		{"name":"status","description":"","args":[]},
		{"name":"diff","description":"","args":[{"name":"path","description":"","type":"","backing_type":"string","arity":"optional","mode":"positional"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if args, ok := d.CommandArgs(""); !ok || args == nil || len(args) != 0 {
		t.Errorf(`CommandArgs("") = %v, %v; want the empty top-level args`, args, ok)
	}
	if args, ok := d.CommandArgs("diff"); !ok || len(args) != 1 || args[0].Name != "path" {
		t.Errorf(`CommandArgs("diff") = %v, %v`, args, ok)
	}
	if args, ok := d.CommandArgs("status"); !ok || len(args) != 0 {
		t.Errorf(`CommandArgs("status") = %v, %v`, args, ok)
	}
	if _, ok := d.CommandArgs("push"); ok {
		t.Error(`CommandArgs("push") found a command that does not exist`)
	}
	var nilD *protocol.Describe
	if _, ok := nilD.CommandArgs(""); ok {
		t.Error("nil Describe has args")
	}
}

func TestCancelJSON(t *testing.T) {
	for _, tt := range []struct {
		c    protocol.Cancel
		json string
	}{
		{protocol.Cancel{Signal: protocol.SignalTerm}, `"SIGTERM"`},
		{protocol.Cancel{Signal: protocol.SignalInt}, `"SIGINT"`},
		{protocol.Cancel{Send: json.RawMessage(`{"cmd":"stop"}`)}, `{"send":{"cmd":"stop"}}`},
		{protocol.Cancel{Send: json.RawMessage(`"quit"`)}, `{"send":"quit"}`},
	} {
		b, err := json.Marshal(tt.c)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.c, b, err, tt.json)
		}
		var back protocol.Cancel
		if err := json.Unmarshal([]byte(tt.json), &back); err != nil || !reflect.DeepEqual(back, tt.c) {
			t.Errorf("Unmarshal(%s) = %+v, %v", tt.json, back, err)
		}
	}
	if _, err := json.Marshal(protocol.Cancel{}); err == nil {
		t.Error("an empty Cancel marshalled")
	}
	if _, err := json.Marshal(protocol.Cancel{Signal: protocol.SignalTerm, Send: json.RawMessage(`1`)}); err == nil {
		t.Error("a Cancel with both forms marshalled")
	}
	for _, bad := range []string{`5`, `{"sned":1}`, `{}`, `[]`} {
		var c protocol.Cancel
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %+v", bad, c)
		}
	}
}

func TestEmptyResultJSON(t *testing.T) {
	for _, tt := range []struct {
		e    protocol.EmptyResult
		json string
	}{
		{protocol.EmptyResult{Tag: protocol.EmptyAddMessage}, `{"tag":"AddMessage","contents":""}`},
		{protocol.EmptyResult{Tag: protocol.EmptyAddMessage, Contents: "none"}, `{"tag":"AddMessage","contents":"none"}`},
		{protocol.EmptyResult{Tag: protocol.EmptyDoNothing}, `{"tag":"DoNothing"}`},
	} {
		b, err := json.Marshal(tt.e)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.e, b, err, tt.json)
		}
	}
	// An AddMessage with empty contents survives the round trip.
	d, err := ParseDescribe([]byte(`{"slug":"x","description":"","args":[],"empty-result":{"tag":"AddMessage","contents":""}}`))
	if err != nil {
		t.Fatal(err)
	}
	assertRoundTrip(t, d)
}

func TestDescribeErrorIsTyped(t *testing.T) {
	for _, in := range []string{``, `nul`, `[]`, `{"protocol":9}`, `{}`} {
		_, err := ParseDescribe([]byte(in))
		var de *DescribeError
		if !errors.As(err, &de) || len(de.Problems) == 0 {
			t.Errorf("ParseDescribe(%q) = %v; want a *DescribeError with problems", in, err)
		}
	}
}

func TestValidCommandName(t *testing.T) {
	for name, want := range map[string]bool{
		"status": true, "add-dir": true, "x_1": true, "9lives": true, "A": true,
		strings.Repeat("a", 64): true, strings.Repeat("a", 65): false,
		"": false, "-x": false, "_x": false, "a.b": false, "a b": false, "é": false,
	} {
		if got := validCommandName(name); got != want {
			t.Errorf("validCommandName(%q) = %v, want %v", name, got, want)
		}
	}
}
