package validate

import (
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

// BenchmarkParseDescribe measures lock-time validation of a v2 document
// (the schemas are compiled once, before the loop).
func BenchmarkParseDescribe(b *testing.B) {
	doc := []byte(`{"protocol":2,"slug":"watch","description":"d","args":[
		{"name":"dir","description":"","type":"","backing_type":"string","arity":"single","mode":"positional"}],
		"process":{"mode":"service","output":{"event":{"type":"object"}},"ready":{"kind":"line","match":"^ready$"}},
		"runtime":{"timeout":{"stop":2},"cancel":"SIGTERM"}}`)
	if _, err := ParseDescribe(doc); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseDescribe(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateEvent measures one small stream event (the stream
// benchmark's, bench/fixtures.sh) through EventValidator.Validate, and the
// schema library's part of it alone.
func BenchmarkValidateEvent(b *testing.B) {
	v, err := CompileEventSchema([]byte(`{"type":"object","required":["n","msg"],"properties":{"n":{"type":"integer"},"msg":{"type":"string"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"n":12345,"msg":"event number 12345"}`)
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Validate(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	val, _ := protocol.DecodeJSON(line)
	b.Run("schema-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := v.schema.Validate(val); err != nil {
				b.Fatal(err)
			}
		}
	})
}
