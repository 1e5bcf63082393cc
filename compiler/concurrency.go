package compiler

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toolbox-dev/toolbox/protocol"
)

// pluginSchema is a plugin block's: a tool block's attributes and
// concurrency, which only plugins have (an exec tool runs each call in a
// process of its own).
var pluginSchema = &hcl.BodySchema{
	Attributes: append(toolSchema.Attributes[:len(toolSchema.Attributes):len(toolSchema.Attributes)], hcl.AttributeSchema{Name: "concurrency"}),
	Blocks:     toolSchema.Blocks,
}

// concurrency reads a plugin block's `concurrency = N`: how many calls one
// warm process of the plugin serves at once (DESIGN.md §5), a whole number
// from 1 to protocol.MaxConcurrency. It reports false after a diagnostic.
func (l *loader) concurrency(t *ToolDecl, a *hcl.Attribute, block string) bool {
	if a == nil {
		return true
	}
	v, ok := l.value(a, block)
	if !ok {
		return false
	}
	fix := fmt.Sprintf("write a whole number from 1 to %d, e.g. concurrency = 4", protocol.MaxConcurrency)
	if v.Type() != cty.Number {
		l.add(at(a.Expr.Range(), block, fmt.Sprintf("concurrency must be a number, got %s", v.Type().FriendlyName()), fix))
		return false
	}
	n, acc := v.AsBigFloat().Int64()
	if acc != 0 || n < 1 || n > protocol.MaxConcurrency {
		l.add(at(a.Expr.Range(), block, fmt.Sprintf("concurrency %s is out of range", v.AsBigFloat().String()), fix))
		return false
	}
	t.Concurrency, t.ConcurrencyRange = int(n), a.Expr.Range()
	return true
}

// resolveConcurrency is the locked runtime.concurrency of a probed tool:
// the operator's concurrency, else the plugin's declared
// runtime.concurrency, else 0 (one call at a time). The operator may lower
// the plugin's declaration, never raise it: the plugin's author says how
// many calls its code serves safely at once; for a plugin that declares
// nothing the operator's value holds. An exec tool that declares it is
// refused (only plugins are kept warm).
func resolveConcurrency(t *ToolDecl, d *protocol.Describe) (int, error) {
	declared := 0
	if d.Runtime != nil {
		declared = d.Runtime.Concurrency
	}
	block := fmt.Sprintf("tool %q", t.Name)
	switch {
	case declared > 0 && t.Kind != KindPlugin:
		return 0, &Diagnostic{File: t.Range.Filename, Line: t.Range.Start.Line, Col: t.Range.Start.Column, Block: block,
			Msg: "runtime.concurrency: only plugins declare it (an exec tool runs each call in a process of its own)",
			Fix: "remove runtime.concurrency from the tool's describe document, or declare it with a plugin block if it is a plugin"}
	case t.Concurrency > 0 && declared > 0 && t.Concurrency > declared:
		r := t.ConcurrencyRange
		return 0, &Diagnostic{File: r.Filename, Line: r.Start.Line, Col: r.Start.Column, Block: block,
			Msg: fmt.Sprintf("concurrency %d is more than the %d calls at once the plugin declares it serves (runtime.concurrency)", t.Concurrency, declared),
			Fix: fmt.Sprintf("set concurrency to %d or less, or remove it", declared)}
	case t.Concurrency > 0:
		return t.Concurrency, nil
	}
	return declared, nil
}
