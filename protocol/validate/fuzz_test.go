package validate

import (
	"errors"
	"testing"
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
