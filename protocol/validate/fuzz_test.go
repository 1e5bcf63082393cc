package validate

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

// FuzzParseDescribe: ParseDescribe never panics, fails only with a
// *DescribeError, and whatever it accepts round-trips: the marshalled
// Describe parses again to the same value. The seed corpus is in
// testdata/fuzz/FuzzParseDescribe.
func FuzzParseDescribe(f *testing.F) {
	f.Add([]byte(`{"slug":"x","description":"","args":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDescribe(data)
		if err != nil {
			var de *DescribeError
			if !errors.As(err, &de) || len(de.Problems) == 0 {
				t.Fatalf("error is not a *DescribeError with problems: %T %v", err, err)
			}
			return
		}
		assertRoundTrip(t, d)
	})
}

// FuzzNumberGuard: mayHoldNumberProblem, which lets Validate skip the walk
// of numberProblems, says yes for every JSON text holding a number the
// walk refuses.
func FuzzNumberGuard(f *testing.F) {
	for _, s := range []string{`{"n":1}`, `{"n":1e1000100}`, `[1E-2000]`, `{"e":"1e5000"}`, `-1.5e+7`,
		`[1` + strings.Repeat("0", 1000) + `]`, `{"n":1` + strings.Repeat("0", 999) + `}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := protocol.DecodeJSON(data)
		if err != nil {
			return
		}
		if probs := numberProblems(v, nil); len(probs) > 0 && !mayHoldNumberProblem(data) {
			t.Fatalf("%q holds %s, but mayHoldNumberProblem says no", data, probs[0])
		}
	})
}
