package sandbox

import (
	"fmt"
	"strings"
)

// Field names used in refusals. They are the paths of the declarations in
// the tool's describe document (runtime.*) or of the tool's own path.
const (
	FieldSandbox = "runtime.sandbox"
	FieldNet     = "runtime.sandbox.net"
	FieldTmp     = "runtime.sandbox.tmp"
	FieldRead    = "runtime.sandbox.fs.read"
	FieldWrite   = "runtime.sandbox.fs.write"
	FieldRunAs   = "runtime.run_as"
	FieldUser    = "runtime.run_as.user"
	FieldGroup   = "runtime.run_as.group"
	FieldRundir  = "runtime.rundir"
	FieldPath    = "path"
)

// RefusalError says that a tool's declaration cannot be honoured: by a
// mechanism (Mechanism set), or at all (Mechanism empty, e.g. a run_as user
// that does not exist). It is returned by Resolve, LookupIdentity, Cmd and
// Start; match it with errors.As. A refused tool never runs.
type RefusalError struct {
	// Tool is the tool's name. The sandbox package does not know it: the
	// caller (compiler or launcher) fills it in before reporting.
	Tool string
	// Field is the declaration that cannot be honoured, one of the Field
	// constants (e.g. FieldNet).
	Field string
	// Mechanism is the mechanism that refused (Auto when neither bwrap nor
	// landlock could), or "" when the refusal does not depend on one.
	Mechanism Mechanism
	// Reason says why, in one lower-case sentence without the fix.
	Reason string
	// Fix says what the operator or the tool's author can change.
	Fix string
	// Block is the toolbox file's block (`builtin "process"`, `mcp_server
	// "x"`) whose sandbox block holds Field, spelled there as written
	// (sandbox.fs.write); "" for a tool's describe document (Spec.Block).
	Block string
}

// Error names the tool, the field, the mechanism and the reason. The fix is
// not repeated here: the top-level reporter prints e.Fix once.
func (e *RefusalError) Error() string {
	var b strings.Builder
	switch {
	case e.Block != "":
		fmt.Fprintf(&b, "%s: ", e.Block)
	case e.Tool != "":
		fmt.Fprintf(&b, "tool %q: ", e.Tool)
	}
	b.WriteString(e.Field)
	if e.Mechanism != "" {
		fmt.Fprintf(&b, " cannot be honoured by sandbox %q", e.Mechanism)
	} else {
		b.WriteString(" cannot be honoured")
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	return b.String()
}

func refuse(field string, m Mechanism, fix, format string, args ...any) *RefusalError {
	return &RefusalError{Field: field, Mechanism: m, Reason: fmt.Sprintf(format, args...), Fix: fix}
}
