package validate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
)

// Limits on a declared event schema (process.output.event,
// process.input.event), checked at lock time by ParseDescribe and again
// by CompileEventSchema. The JSON Schema compiler takes time growing
// faster than the square of a schema's nesting (a `not` nested 3000 deep
// took 15 s); within these limits a schema compiles in milliseconds. An
// event schema with its properties nested ten deep is about 20 levels.
const (
	// MaxEventSchemaDepth bounds the nesting of objects and arrays in an
	// event schema's JSON (the schema itself is level 1).
	MaxEventSchemaDepth = 32
	// MaxEventSchemaBytes bounds the length of an event schema's JSON,
	// compacted (no white space outside strings).
	MaxEventSchemaBytes = 64 << 10
)

// schemaLimitProblem says why a decoded event schema is beyond the limits,
// or "" when it is within them. It measures the decoded value, so that
// ParseDescribe (at lock) and CompileEventSchema (at run) agree.
func schemaLimitProblem(doc any) string {
	if jsonDepth(doc) > MaxEventSchemaDepth {
		return fmt.Sprintf("the schema is nested more than %d levels deep; nest it at most %d deep (move parts to $defs and $ref them)", MaxEventSchemaDepth, MaxEventSchemaDepth)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err == nil && buf.Len()-1 > MaxEventSchemaBytes {
		return fmt.Sprintf("the schema is %d bytes of JSON; keep it under %d", buf.Len()-1, MaxEventSchemaBytes)
	}
	return ""
}

// jsonDepth is the nesting of objects and arrays in a decoded JSON value: 0
// for a scalar, 1 for an object of scalars. It stops one level past
// MaxEventSchemaDepth, so a deeper value gives MaxEventSchemaDepth+1.
func jsonDepth(v any) int {
	var walk func(v any, depth int) int
	walk = func(v any, depth int) int {
		var children []any
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				children = append(children, e)
			}
		case []any:
			children = v
		default:
			return depth - 1 // a scalar adds no level
		}
		deepest := depth
		for _, e := range children {
			if deepest > MaxEventSchemaDepth {
				break
			}
			deepest = max(deepest, walk(e, depth+1))
		}
		return deepest
	}
	return max(walk(v, 1), 0)
}

// schemaCache holds the outcome of every CompileEventSchema call of this
// process, keyed by the sha256 of the schema's bytes, so that a server
// compiles each declared schema once (compiling costs far more than
// validating). It is bounded: once it holds maxCachedSchemas outcomes it
// is emptied and filled again.
var schemaCache = struct {
	sync.Mutex
	m map[[sha256.Size]byte]compiled
}{m: map[[sha256.Size]byte]compiled{}}

const maxCachedSchemas = 256

type compiled struct {
	v   *EventValidator
	err error
}

// cachedCompile returns the cached outcome of compiling raw, or runs
// compile and caches what it returns.
func cachedCompile(raw []byte, compile func() (*EventValidator, error)) (*EventValidator, error) {
	key := sha256.Sum256(raw)
	schemaCache.Lock()
	c, ok := schemaCache.m[key]
	schemaCache.Unlock()
	if ok {
		return c.v, c.err
	}
	v, err := compile()
	schemaCache.Lock()
	if len(schemaCache.m) >= maxCachedSchemas {
		clear(schemaCache.m)
	}
	schemaCache.m[key] = compiled{v, err}
	schemaCache.Unlock()
	return v, err
}
