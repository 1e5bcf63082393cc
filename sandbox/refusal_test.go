package sandbox

import (
	"errors"
	"strings"
	"testing"
)

// TestRefusalNamesTheBlockAsWritten: a spec declared by a toolbox file's
// block (builtin "process", mcp_server) is refused naming that block and
// the field as the operator wrote it (sandbox.net), by Check and by Cmd;
// a tool's spec keeps the describe document's runtime.* field.
func TestRefusalNamesTheBlockAsWritten(t *testing.T) {
	block := &Spec{Mechanism: Landlock, NetNone: true, Block: `builtin "process"`}
	tool := &Spec{Mechanism: Landlock, NetNone: true}
	cmd := func(s *Spec) error {
		_, done, err := Cmd(s, Command{Path: "/bin/true"})
		if done != nil {
			done()
		}
		return err
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"block check", block.Check(), `builtin "process": sandbox.net cannot be honoured by sandbox "landlock"`},
		{"block cmd", cmd(block), `builtin "process": sandbox.net cannot be honoured by sandbox "landlock"`},
		{"tool check", tool.Check(), `runtime.sandbox.net cannot be honoured by sandbox "landlock"`},
	} {
		var r *RefusalError
		if !errors.As(c.err, &r) {
			t.Fatalf("%s: got %v, want a *RefusalError", c.name, c.err)
		}
		if got := c.err.Error(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want it to start with %q", c.name, got, c.want)
		}
	}
	// Naming it twice (a caller that already did) changes nothing.
	err := block.Check()
	if got := block.AsDeclared(err).Error(); strings.Count(got, `builtin "process"`) != 1 {
		t.Errorf("named twice: %q", got)
	}
}
