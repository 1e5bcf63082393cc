package validate

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolbox-dev/toolbox/protocol"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The describe schemas ship inside the binary: validating a describe
// document never reads the network or the file system.
//
//go:embed schema/describe-v1.json schema/describe-v2.json
var schemaFiles embed.FS

// Schema URLs equal the $id of each embedded file. The .invalid domain
// never resolves, and the loader below refuses every external URL anyway.
const (
	schemaV1URL = "https://toolbox.invalid/schema/describe-v1.json"
	schemaV2URL = "https://toolbox.invalid/schema/describe-v2.json"
	eventURL    = "https://toolbox.invalid/schema/event.json"
)

// describeSchemas holds the compiled v1 and v2 schemas and their decoded
// text, which error messages read to list the keys an object allows.
type describeSchemas struct {
	v1, v2 *jsonschema.Schema
	raw    map[string]any // schema URL -> decoded document
}

// loadDescribeSchemas compiles the embedded schemas on first use only, so
// that code paths which never parse a describe document (toolbox run) never
// pay for it.
var loadDescribeSchemas = sync.OnceValues(compileDescribeSchemas)

// describeSchemasCompiled records that compileDescribeSchemas ran, so that
// a test can prove the per-call paths never compile them.
var describeSchemasCompiled atomic.Bool

func compileDescribeSchemas() (*describeSchemas, error) {
	describeSchemasCompiled.Store(true)
	s := &describeSchemas{raw: map[string]any{}}
	c := newSchemaCompiler()
	for url, file := range map[string]string{
		schemaV1URL: "schema/describe-v1.json",
		schemaV2URL: "schema/describe-v2.json",
	} {
		data, err := schemaFiles.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading embedded %s: %w", file, err)
		}
		doc, err := protocol.DecodeJSON(data)
		if err != nil {
			return nil, fmt.Errorf("decoding embedded %s: %w", file, err)
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("adding embedded %s: %w", file, err)
		}
		s.raw[url] = doc
	}
	var err error
	if s.v1, err = c.Compile(schemaV1URL); err != nil {
		return nil, fmt.Errorf("compiling the embedded v1 describe schema: %w", err)
	}
	if s.v2, err = c.Compile(schemaV2URL); err != nil {
		return nil, fmt.Errorf("compiling the embedded v2 describe schema: %w", err)
	}
	return s, nil
}

// errExternalRef is what the loader answers for every $ref or $schema that
// is not one of the embedded or standard meta-schemas.
var errExternalRef = errors.New("external references are not allowed; inline the schema")

type refusingLoader struct{}

func (refusingLoader) Load(string) (any, error) { return nil, errExternalRef }

// newSchemaCompiler returns a compiler that never touches files or the
// network (the library's default loader reads file: URLs) and that treats a
// schema without $schema as draft 2020-12.
func newSchemaCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	return c
}

// compileSchemaValue compiles one JSON Schema given as a decoded JSON value
// (object or boolean), e.g. a declared event schema. A panic inside the
// library becomes an error.
func compileSchemaValue(doc any) (sch *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			sch, err = nil, fmt.Errorf("the JSON Schema compiler failed on this schema: %v", r)
		}
	}()
	c := newSchemaCompiler()
	if err := c.AddResource(eventURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(eventURL)
}

// problem is one finding about a document: where (a JSON pointer into the
// document) and what, with the fix when one is obvious.
type problem struct {
	ptr []string // unescaped tokens
	msg string
}

func (p problem) String() string {
	return displayPointer(p.ptr) + ": " + p.msg
}

// displayPointer renders tokens as an RFC 6901 JSON pointer, and the whole
// document (the empty pointer) as "(document)" so that it reads in a message.
func displayPointer(tokens []string) string {
	if len(tokens) == 0 {
		return "(document)"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// printer formats the library's own messages; built on first use so that
// processes that never validate do not pay for it.
var printer = sync.OnceValue(func() *message.Printer { return message.NewPrinter(language.English) })

// schemaProblems turns a validation error tree into one problem per leaf,
// each located at prefix + its instance location. raw maps schema URLs to
// decoded schema documents, to name the keys an object allows; it may be nil.
func schemaProblems(verr *jsonschema.ValidationError, prefix []string, raw map[string]any) []problem {
	var out []problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if pn, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			// jsonschema v6.0.3 shares this error's InstanceLocation with
			// the validator, which goes on to change it: name the key
			// rather than trust the location. Its causes repeat the rule.
			out = append(out, problem{
				ptr: prefix,
				msg: fmt.Sprintf("key %q is not an allowed property name", pn.Property),
			})
			return
		}
		if alternativesAtOnePlace(e) {
			// Every alternative failed at the same value (as the
			// meta-schema's "type": string-or-array does): the first one
			// says enough, the others restate it.
			out = append(out, leafProblems(soleLeaf(e.Causes[0]), prefix, raw)...)
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, leafProblems(e, prefix, raw)...)
	}
	walk(verr)
	return out
}

// alternativesAtOnePlace reports whether e is a failed anyOf/oneOf whose
// causes are all leaves located at the same value.
func alternativesAtOnePlace(e *jsonschema.ValidationError) bool {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
	default:
		return false
	}
	if len(e.Causes) < 2 {
		return false
	}
	first := soleLeaf(e.Causes[0])
	for _, c := range e.Causes {
		l := soleLeaf(c)
		if l == nil || first == nil || !slices.Equal(l.InstanceLocation, first.InstanceLocation) {
			return false
		}
	}
	return true
}

// soleLeaf follows a chain of single causes ($ref wrappers) down to its
// leaf, or returns nil when the error branches.
func soleLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) == 1 {
		e = e.Causes[0]
	}
	if len(e.Causes) > 1 {
		return nil
	}
	return e
}

func joinPtr(prefix, loc []string, more ...string) []string {
	p := make([]string, 0, len(prefix)+len(loc)+len(more))
	p = append(p, prefix...)
	p = append(p, loc...)
	return append(p, more...)
}

func leafProblems(e *jsonschema.ValidationError, prefix []string, raw map[string]any) []problem {
	at := joinPtr(prefix, e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return []problem{{at, fmt.Sprintf("want %s, got %s", strings.Join(k.Want, " or "), k.Got)}}
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = displayEnum(w)
		}
		return []problem{{at, fmt.Sprintf("%s is not one of %s", displayValue(k.Got), strings.Join(want, ", "))}}
	case *kind.Const:
		return []problem{{at, fmt.Sprintf("%s must be %s", displayValue(k.Got), displayValue(k.Want))}}
	case *kind.Required:
		var out []problem
		for _, m := range k.Missing {
			out = append(out, problem{at, fmt.Sprintf("missing required key %q", m)})
		}
		return out
	case *kind.AdditionalProperties:
		allowed := allowedKeys(raw, e.SchemaURL)
		var out []problem
		for _, p := range k.Properties {
			msg := fmt.Sprintf("unknown key %q", p)
			if len(allowed) > 0 {
				msg += "; allowed keys: " + strings.Join(allowed, ", ")
			}
			out = append(out, problem{joinPtr(at, nil, p), msg})
		}
		return out
	case *kind.MinLength:
		if k.Want == 1 {
			return []problem{{at, "must not be empty"}}
		}
	case *kind.Minimum:
		return []problem{{at, fmt.Sprintf("%s is below the minimum %s", ratText(k.Got), ratText(k.Want))}}
	case *kind.Maximum:
		return []problem{{at, fmt.Sprintf("%s is above the maximum %s", ratText(k.Got), ratText(k.Want))}}
	case *kind.FalseSchema:
		return []problem{{at, "no value is allowed here"}}
	}
	return []problem{{at, e.ErrorKind.LocalizedString(printer())}}
}

// allowedKeys lists, sorted, the "properties" of the schema object at
// schemaURL (an absolute URL with a JSON-pointer fragment) in raw.
func allowedKeys(raw map[string]any, schemaURL string) []string {
	base, frag, _ := strings.Cut(schemaURL, "#")
	v, ok := raw[base]
	if !ok {
		return nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	m, _ := v.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ratText renders a number from a schema error briefly: integers exactly,
// others with up to six decimals.
func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.RatString()
	}
	s := strings.TrimRight(r.FloatString(6), "0")
	return strings.TrimSuffix(s, ".")
}

// displayValue renders a decoded JSON value as short JSON text for a message.
func displayValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return protocol.Truncate(string(b), 60)
}

// displayEnum renders an allowed value bare when it is a string (the
// message lists words), as JSON otherwise.
func displayEnum(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return displayValue(v)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
