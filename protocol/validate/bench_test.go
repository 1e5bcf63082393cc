package validate

import "testing"

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
