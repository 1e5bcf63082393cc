package validate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// notChain is a schema of n nested `not`s: n+1 levels of JSON (the
// innermost is `true`, a scalar).
func notChain(n int) string {
	return strings.Repeat(`{"not":`, n) + "true" + strings.Repeat("}", n)
}

// describeWithSchema is a v2 describe document declaring schema as its
// output event schema.
func describeWithSchema(schema string) []byte {
	return []byte(`{"protocol":2,"slug":"deep","description":"d","args":[],
	"process":{"output":{"framing":"jsonl","event":` + schema + `}}}`)
}

// TestEventSchemaLimitsAtLock: a describe document whose event schema is a
// `not` nested 3000 deep (which took 15 s to compile at every run) or is
// larger than MaxEventSchemaBytes is refused by ParseDescribe, naming the
// field; a schema at the limits is accepted. The refusal is quick.
func TestEventSchemaLimitsAtLock(t *testing.T) {
	start := time.Now()
	_, err := ParseDescribe(describeWithSchema(notChain(3000)))
	want := fmt.Sprintf("/process/output/event: the schema is nested more than %d levels deep", MaxEventSchemaDepth)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ParseDescribe(3000-deep not) = %v, want %q", err, want)
	}
	t.Logf("a 3000-deep schema refused in %s", time.Since(start))

	wide := `{"enum":["` + strings.Repeat("x", MaxEventSchemaBytes) + `"]}`
	_, err = ParseDescribe(describeWithSchema(wide))
	if err == nil || !strings.Contains(err.Error(), "/process/output/event: the schema is ") || !strings.Contains(err.Error(), fmt.Sprintf("keep it under %d", MaxEventSchemaBytes)) {
		t.Errorf("ParseDescribe(large schema) = %v", err)
	}
	input := []byte(`{"protocol":2,"slug":"svc","description":"d","args":[],
	"process":{"mode":"service","ready":{"kind":"immediate"},"input":{"framing":"jsonl","event":` + notChain(100) + `}}}`)
	if _, err := ParseDescribe(input); err == nil || !strings.Contains(err.Error(), "/process/input/event: the schema is nested more than") {
		t.Errorf("ParseDescribe(deep input schema) = %v", err)
	}

	// The positive twin: MaxEventSchemaDepth levels (a chain of
	// MaxEventSchemaDepth-1 nots around a scalar... plus one object level).
	start = time.Now()
	if _, err := ParseDescribe(describeWithSchema(notChain(MaxEventSchemaDepth))); err != nil {
		t.Fatalf("ParseDescribe(%d-deep not) = %v", MaxEventSchemaDepth, err)
	}
	t.Logf("a schema %d deep validated and compiled in %s", MaxEventSchemaDepth, time.Since(start))
	if _, err := ParseDescribe(describeWithSchema(notChain(MaxEventSchemaDepth + 1))); err == nil {
		t.Errorf("a schema %d deep was accepted", MaxEventSchemaDepth+1)
	}
}

// TestCompileEventSchemaLimits: a lock edited by hand cannot bring a deep
// schema to run time either: CompileEventSchema refuses it the same way.
func TestCompileEventSchemaLimits(t *testing.T) {
	_, err := CompileEventSchema(json.RawMessage(notChain(3000)))
	if err == nil || !strings.Contains(err.Error(), "compiling event schema: the schema is nested more than") {
		t.Fatalf("CompileEventSchema(3000-deep not) = %v", err)
	}
	if _, err := CompileEventSchema(json.RawMessage(notChain(MaxEventSchemaDepth))); err != nil {
		t.Fatalf("CompileEventSchema at the limit: %v", err)
	}
}

// TestCompileEventSchemaOnce: a schema is compiled once per process; the
// same bytes give the same validator, other bytes another one, and a
// refusal is remembered too.
func TestCompileEventSchemaOnce(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","required":["once"]}`)
	a, err := CompileEventSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := CompileEventSchema(append(json.RawMessage(nil), raw...))
	if err != nil || a != b {
		t.Fatalf("the second compile of the same schema gave %p (%v), want the cached %p", b, err, a)
	}
	c, err := CompileEventSchema(json.RawMessage(`{"type":"object","required":["other"]}`))
	if err != nil || c == a {
		t.Fatalf("another schema gave the cached validator: %p %v", c, err)
	}
	if _, err := b.Validate([]byte(`{}`)); err == nil {
		t.Error("the cached validator accepts an event its schema refuses")
	}
}

// BenchmarkCompileEventSchemaCached: what every run after the first pays
// for its schema (compare BenchmarkCompileEventSchemaUncached).
func BenchmarkCompileEventSchemaCached(b *testing.B) {
	raw := json.RawMessage(notChain(MaxEventSchemaDepth))
	for b.Loop() {
		if _, err := CompileEventSchema(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileEventSchemaUncached(b *testing.B) {
	raw := json.RawMessage(notChain(MaxEventSchemaDepth))
	for b.Loop() {
		if _, err := compileEventSchema(raw); err != nil {
			b.Fatal(err)
		}
	}
}
