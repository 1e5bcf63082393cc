package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeSeeds are inputs at the edges of JSON's grammar and of
// encoding/json's reading of it; FuzzDecodeJSON starts from them and
// TestDecodeJSONAgrees runs them as a normal test.
var decodeSeeds = []string{
	``, ` `, "\t\r\n", `{}`, `[]`, `""`, `0`, `-0`, `null`, `true`, `false`,
	`{"n":1,"msg":"event number 1"}`,
	`{"a":{"b":[1,2,{"c":null}],"d":true},"e":false}`,
	` {"a" : 1 , "b" : [ ] } `, "{\"a\":1}\r", "{\"a\":1}\n\n",
	`{"a":1,"a":2}`, `{"a":1,"a":{"x":1}}`, `{"":0}`,
	`01`, `-`, `-01`, `1.`, `.5`, `1e`, `1e+`, `1E5`, `1e-05`, `-1.5e+300`, `1e1000000`,
	`123456789012345678901234567890`, `1.0`, `+1`, `0x10`, `1_000`, `NaN`, `Infinity`,
	`tru`, `nul`, `nulll`, `truex`, `true false`, `falsey`, `[1,]`, `{"a":1,}`, `[,1]`,
	`{"a"}`, `{"a":}`, `{a:1}`, `{'a':1}`, `{"a" 1}`, `[1 2]`, `[`, `{`, `]`, `}`, `"abc`,
	`{"a":1} {"b":2}`, `{"a":1}x`, "{\"a\":1} \u00a0", "{\"a\":1} \x00", "\ufeff{}",
	`"\"\\\/\b\f\n\r\t"`, `"\'"`, `"\x"`, `"\u00e9"`, `"\u00E9"`, `"\u0000"`, `"\u12"`, `"\u12G4"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`,
	`"\ud83d\u"`, `"\ud83d\`, `"\`, `"\ud83d\ude0"`,
	"\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"é😀\"", "\"\x7f\"",
	"\"a\x01b\"", "\"tab\there\"", "{\"\xff\":1}", "{\"k\\u00e9\":\"v\"}",
	strings.Repeat("[", 500) + strings.Repeat("]", 500),
	strings.Repeat("[", 501) + strings.Repeat("]", 501),
	strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"s":"` + strings.Repeat("x", 5000) + `","t":"\u00e9` + strings.Repeat("y", 100) + `"}`,
}

// checkDecodeAgrees fails t when decodeJSON (the fast path first) and
// stdDecodeJSON (encoding/json alone) disagree on data: acceptance, the
// error's text, or the decoded value.
func checkDecodeAgrees(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := stdDecodeJSON(data)
	got, err := decodeJSON(data)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("decodeJSON(%q): error %v, encoding/json: %v", data, err, wantErr)
	case err != nil && err.Error() != wantErr.Error():
		t.Fatalf("decodeJSON(%q): error %q, encoding/json: %q", data, err, wantErr)
	case !reflect.DeepEqual(got, want):
		t.Fatalf("decodeJSON(%q) = %#v, encoding/json: %#v", data, got, want)
	}
	// The fast path must not only agree but take what it can: below
	// fastMaxDepth bytes nothing can nest too deep for it.
	fast, ok := fastDecode(data)
	if ok && !reflect.DeepEqual(fast, want) {
		t.Fatalf("fastDecode(%q) = %#v, encoding/json: %#v", data, fast, want)
	}
	if !ok && wantErr == nil && len(data) <= fastMaxDepth {
		t.Fatalf("fastDecode(%q) gave up on JSON encoding/json takes", data)
	}
}

// FuzzDecodeJSON: for any input, DecodeJSON accepts exactly what
// encoding/json's Decoder (UseNumber, nothing but white space after the
// value) accepts, gives the same value, and the same error text.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeAgrees)
}

func TestDecodeJSONAgrees(t *testing.T) {
	for _, s := range decodeSeeds {
		checkDecodeAgrees(t, []byte(s))
	}
}

// TestDecodeJSONValues pins values where encoding/json's reading is not the
// obvious one: they are what events are validated as.
func TestDecodeJSONValues(t *testing.T) {
	for _, c := range []struct {
		in   string
		want any
	}{
		{`{"a":1,"a":"two"}`, map[string]any{"a": "two"}},
		{`[]`, []any{}},
		{` 1.50e+3 `, json.Number("1.50e+3")},
		{`"\ud83d\ude00"`, "😀"},
		{`"\ud83d\u0041"`, "\ufffdA"},
		{`"\ude00x"`, "\ufffdx"},
		{"\"a\xffb\"", "a\ufffdb"},
		{"\"\xed\xa0\x80\"", "\ufffd\ufffd\ufffd"},
		{`"\/"`, "/"},
	} {
		got, err := DecodeJSON([]byte(c.in))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("DecodeJSON(%q) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	for in, want := range map[string]string{
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001): "exceeded max depth",
		`"\'"`:     "invalid character '\\'' in string escape code",
		`{"a":1}x`: "unexpected data after the JSON value at byte 7",
		"":         "empty input",
		`[1,`:      "unexpected end of input",
	} {
		if _, err := DecodeJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeJSON(%.20q): error %v, want one with %q", in, err, want)
		}
	}
}

// BenchmarkDecodeJSON measures one small event (the stream benchmark's) by
// the fast path and by encoding/json.
func BenchmarkDecodeJSON(b *testing.B) {
	line := []byte(`{"n":12345,"msg":"event number 12345"}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeJSON(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := stdDecodeJSON(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
