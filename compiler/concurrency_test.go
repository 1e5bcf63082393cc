package compiler

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/toolbox-dev/toolbox/protocol"
)

// The locked concurrency: the operator lowers the plugin's declaration,
// never raises it; sets it when the plugin declares none; an exec tool may
// not declare it.
func TestResolveConcurrency(t *testing.T) {
	declares := func(n int) *protocol.Describe {
		return &protocol.Describe{Protocol: 2, Runtime: &protocol.Runtime{Concurrency: n}}
	}
	r := hcl.Range{Filename: "toolbox.hcl", Start: hcl.Pos{Line: 4, Column: 17}}
	for _, c := range []struct {
		name     string
		kind     string
		operator int
		d        *protocol.Describe
		want     int
		err      string
	}{
		{name: "nothing", kind: KindPlugin, d: &protocol.Describe{}, want: 0},
		{name: "declared", kind: KindPlugin, d: declares(8), want: 8},
		{name: "lowered", kind: KindPlugin, operator: 2, d: declares(8), want: 2},
		{name: "equal", kind: KindPlugin, operator: 8, d: declares(8), want: 8},
		{name: "undeclared", kind: KindPlugin, operator: 3, d: &protocol.Describe{}, want: 3},
		{name: "raised", kind: KindPlugin, operator: 9, d: declares(8),
			err: `toolbox.hcl:4:17: tool "p": concurrency 9 is more than the 8 calls at once the plugin declares it serves (runtime.concurrency); set concurrency to 8 or less, or remove it`},
		{name: "exec", kind: KindExec, d: declares(2), err: "runtime.concurrency: only plugins declare it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			td := &ToolDecl{Name: "p", Kind: c.kind, Range: r, Concurrency: c.operator, ConcurrencyRange: r}
			got, err := resolveConcurrency(td, c.d)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %d, %v; want %d", got, err, c.want)
			}
		})
	}
}
