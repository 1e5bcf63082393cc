package validate

import (
	"encoding/json"
	"fmt"
	"github.com/toolbox-dev/toolbox/protocol"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Limits on JSON numbers handed to the JSON Schema validator. It converts
// numbers to math/big.Rat: an exponent near 10^6 costs it tens of
// milliseconds per number, and beyond that jsonschema v6.0.3 panics on a
// nil *big.Rat. No describe document or event needs numbers near these
// limits (float64 ends at about 1e308).
const (
	maxNumberLen      = 1000 // characters of the number's JSON text
	maxNumberExponent = 1000 // absolute value of its exponent part
)

// numberProblem says why a JSON number cannot be validated, or "".
func numberProblem(n string) string {
	if len(n) > maxNumberLen {
		return fmt.Sprintf("a number of %d characters is too long to check; use at most %d", len(n), maxNumberLen)
	}
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return ""
	}
	exp := strings.TrimLeft(strings.TrimLeft(n[i+1:], "+-"), "0")
	if e, err := strconv.Atoi(exp); exp != "" && (err != nil || e > maxNumberExponent) {
		return fmt.Sprintf("%s: exponent out of range; use one between -%d and %d", protocol.Truncate(n, 40), maxNumberExponent, maxNumberExponent)
	}
	return ""
}

// numberProblems walks a decoded JSON value and reports every number the
// validator cannot take, located at prefix + its path.
func numberProblems(v any, prefix []string) []problem {
	var out []problem
	// at is one path, extended and cut as the walk goes, and copied only
	// for a problem: copying it at every level cost the square of the
	// document's depth.
	at := ptr(prefix)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				at = append(at, k)
				walk(e)
				at = at[:len(at)-1]
			}
		case []any:
			for i, e := range v {
				at = append(at, strconv.Itoa(i))
				walk(e)
				at = at[:len(at)-1]
			}
		case json.Number:
			if msg := numberProblem(string(v)); msg != "" {
				out = append(out, problem{ptr: ptr(at), msg: msg})
			}
		}
	}
	walk(v)
	return out
}

// mayHoldNumberProblem says whether the JSON text b may hold a number
// numberProblem refuses: one longer than maxNumberLen needs a longer text,
// and an exponent is a digit followed by 'e' or 'E'. It saves the walk of
// numberProblems on nearly every event of a stream (issue 13); where it
// says yes, the walk decides.
func mayHoldNumberProblem(b []byte) bool {
	if len(b) > maxNumberLen {
		return true
	}
	for i := 1; i < len(b); i++ {
		if c := b[i]; (c == 'e' || c == 'E') && b[i-1] >= '0' && b[i-1] <= '9' {
			return true
		}
	}
	return false
}

// validateSafely runs sch.Validate, turning a panic inside the library into
// an error: a malformed input must never crash a caller.
func validateSafely(sch *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the JSON Schema validator failed on this value: %v", r)
		}
	}()
	return sch.Validate(v)
}
