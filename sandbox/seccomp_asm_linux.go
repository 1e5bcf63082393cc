//go:build !amd64

package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/internal/seccompasm"
)

// assemble assembles the filter of variant (rules, tty) at run time: no
// program was generated for this architecture (see seccomp_programs_amd64.go).
func assemble(rules filterRules, tty bool) ([]unix.SockFilter, error) {
	return seccompasm.Program(seccompasm.Rules(rules), tty)
}
