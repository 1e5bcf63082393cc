package validate

import (
	"github.com/toolbox-dev/toolbox/protocol"

	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DescribeError lists every problem found in a describe document. Each entry
// of Problems reads "POINTER: what is wrong[; the fix]", where POINTER is an
// RFC 6901 JSON pointer into the document ("(document)" for the whole of
// it), e.g. `/args/0/mode: "flag" is not one of positional, dashdashspace,
// dashdashequal, stdin, env`. Problems are sorted by pointer.
type DescribeError struct {
	Problems []string
}

func (e *DescribeError) Error() string {
	if len(e.Problems) == 1 {
		return "describe: " + e.Problems[0]
	}
	return fmt.Sprintf("describe: %d problems:\n  %s", len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// ParseDescribe parses and validates what `TOOL describe` printed.
//
// The "protocol" key chooses the embedded JSON Schema: absent or 1 is v1,
// 2 is v2, anything else is an error. Unknown keys are ignored at the top
// level and in args (v1 requires it), and so are the v2-only keys (process,
// runtime, commands, check) in a v1 document: the returned Describe has them
// unset. The objects v2 adds are strict: a misspelt key there is reported.
//
// Beyond the schema it checks what a schema cannot say: arg names unique
// (per command too) and env-mode names valid, unique and not reserved
// (see EnvName); command names valid and unique; ready.kind "line" with a
// Go regexp in match; digest.n > 0 for per "events" or "seconds"; every
// process.output.event and process.input.event compiles as a JSON Schema
// and is within MaxEventSchemaDepth and MaxEventSchemaBytes;
// cancel is "SIGTERM", "SIGINT" or {"send": EVENT}, the event valid against
// input.event when declared; output-media-type parses as a media type.
//
// A JSON number longer than 1000 characters or with an exponent beyond
// ±1000, anywhere in the document (unknown keys included), is refused and
// reported alone: the schema validator cannot take it (see guard.go).
//
// The error is a *DescribeError listing every problem found, or, only when
// the embedded schemas fail to compile (a build defect), a plain error.
// The schemas are compiled on the first call and reused.
func ParseDescribe(data []byte) (*protocol.Describe, error) {
	doc, err := protocol.DecodeJSON(data)
	if err != nil {
		return nil, &DescribeError{Problems: []string{problem{msg: "not JSON: " + err.Error()}.String()}}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, &DescribeError{Problems: []string{problem{msg: "want a JSON object, got " + protocol.JSONKind(doc)}.String()}}
	}
	if probs := numberProblems(doc, nil); len(probs) > 0 {
		// The validator cannot take these numbers; report them alone.
		return nil, newDescribeError(probs)
	}
	version, p := protocolVersion(obj)
	if p != nil {
		return nil, &DescribeError{Problems: []string{p.String()}}
	}
	schemas, err := loadDescribeSchemas()
	if err != nil {
		return nil, err
	}
	sch := schemas.v1
	if version == 2 {
		sch = schemas.v2
	}
	var probs []problem
	if err := validateSafely(sch, doc); err != nil {
		var verr *jsonschema.ValidationError
		if errors.As(err, &verr) {
			probs = append(probs, schemaProblems(verr, nil, schemas.raw)...)
		} else {
			probs = append(probs, problem{msg: err.Error()})
		}
	}
	probs = append(probs, checkSemantics(obj, version == 2)...)
	if len(probs) > 0 {
		return nil, newDescribeError(probs)
	}
	return buildDescribe(obj, version == 2), nil
}

// newDescribeError sorts and de-duplicates probs.
func newDescribeError(probs []problem) *DescribeError {
	slices.SortStableFunc(probs, func(a, b problem) int {
		if c := comparePointers(a.ptr, b.ptr); c != 0 {
			return c
		}
		return strings.Compare(a.msg, b.msg)
	})
	out := make([]string, 0, len(probs))
	for _, p := range probs {
		s := p.String()
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return &DescribeError{Problems: out}
}

// comparePointers orders pointers token by token, array indices numerically
// (so /args/2 comes before /args/10).
func comparePointers(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

// protocolVersion reads "protocol": absent or 1 is v1, 2 is v2. Only the
// integer literals are accepted, so that the Describe round-trips exactly.
func protocolVersion(obj map[string]any) (int, *problem) {
	v, ok := obj["protocol"]
	if !ok {
		return 1, nil
	}
	if n, ok := v.(json.Number); ok {
		switch n.String() {
		case "1":
			return 1, nil
		case "2":
			return 2, nil
		}
	}
	return 0, &problem{ptr: []string{"protocol"}, msg: fmt.Sprintf("%s is not a supported protocol; use 1 (or omit the key) or 2", displayValue(v))}
}
