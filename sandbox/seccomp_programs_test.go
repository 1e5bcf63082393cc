//go:build linux && amd64

package sandbox

import (
	"slices"
	"testing"

	"github.com/toolbox-dev/toolbox/sandbox/internal/seccompasm"
)

// The pre-assembled programs are seccompasm's, variant by variant: a rule
// changed in seccompasm without `go generate` in sandbox/ fails here
// (and the run-time assembly it replaces is what the filter tests
// exercise through program).
func TestGeneratedSeccompPrograms(t *testing.T) {
	if len(programs) != seccompasm.Variants {
		t.Fatalf("%d programs generated, seccompasm has %d variants: run go generate in sandbox/", len(programs), seccompasm.Variants)
	}
	for i := range seccompasm.Variants {
		r, tty := seccompasm.Variant(i)
		if got := variantOf(filterRules(r), tty); got != i {
			t.Errorf("variantOf(%+v, %v) = %d, want %d", r, tty, got, i)
		}
		want, err := seccompasm.Program(r, tty)
		must(t, err)
		got, err := program(filterRules(r), tty)
		must(t, err)
		if !slices.Equal(got, want) {
			t.Errorf("variant %d (%+v, tty %v): the generated program differs from seccompasm's (%d and %d instructions): run go generate in sandbox/", i, r, tty, len(got), len(want))
		}
	}
}
