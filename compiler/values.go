package compiler

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Attribute values are literals: no variables or functions exist in a
// toolbox file, so an expression referring to anything is an error.

func (l *loader) value(a *hcl.Attribute, block string) (cty.Value, bool) {
	v, hd := a.Expr.Value(nil)
	if hd.HasErrors() {
		l.diags = append(l.diags, l.quoteHint(a, hd, blockOr(block, a.Name))...)
		return cty.NilVal, false
	}
	if v.IsNull() || !v.IsKnown() {
		l.add(at(a.Expr.Range(), blockOr(block, a.Name), a.Name+" is null", "give it a value or remove it"))
		return cty.NilVal, false
	}
	return v, true
}

// quoteHint converts the diagnostics of evaluating a's value. A bare word
// where a string belongs (sandbox = auto, path = tools/x) is HCL's
// "Variables not allowed": the fix is to quote it, so the diagnostic says
// how, once for the whole value (sandbox = "auto"), or per word inside a
// list or object.
func (l *loader) quoteHint(a *hcl.Attribute, hd hcl.Diagnostics, block string) Diagnostics {
	text := l.source(a.Expr.Range())
	bare := text != "" && !strings.ContainsAny(text, "[]{}\"\n")
	hinted := false
	var out Diagnostics
	for _, d := range hd {
		ds := fromHCL(hcl.Diagnostics{d}, block)
		if len(ds) == 0 {
			continue // not an error
		}
		switch {
		case d.Summary != "Variables not allowed" || d.Subject == nil:
			out = append(out, ds[0])
		case bare && hinted: // the value's one diagnostic is out
		case bare:
			out = append(out, at(a.Expr.Range(), block, ds[0].Msg, fmt.Sprintf("a string is written in double quotes: %s = %q", a.Name, text)))
			hinted = true
		default:
			ds[0].Fix = fmt.Sprintf("a string is written in double quotes: %q", l.source(*d.Subject))
			out = append(out, ds[0])
		}
	}
	return out
}

// source is the text of the toolbox file at r, "" when r is outside it.
func (l *loader) source(r hcl.Range) string {
	src := l.cfg.Source
	if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return ""
	}
	return string(src[r.Start.Byte:r.End.Byte])
}

func blockOr(block, attr string) string {
	if block == "" {
		return attr
	}
	return block
}

func (l *loader) str(a *hcl.Attribute, block string) (string, bool) {
	v, ok := l.value(a, block)
	if !ok {
		return "", false
	}
	if v.Type() != cty.String {
		l.add(at(a.Expr.Range(), blockOr(block, a.Name), fmt.Sprintf("%s must be a string, got %s", a.Name, v.Type().FriendlyName()), `quote the value: "..."`))
		return "", false
	}
	return v.AsString(), true
}

func (l *loader) boolean(a *hcl.Attribute, block string) (bool, bool) {
	v, ok := l.value(a, block)
	if !ok {
		return false, false
	}
	if v.Type() != cty.Bool {
		l.add(at(a.Expr.Range(), blockOr(block, a.Name), fmt.Sprintf("%s must be a bool, got %s", a.Name, v.Type().FriendlyName()), "write true or false"))
		return false, false
	}
	return v.True(), true
}

func (l *loader) strList(a *hcl.Attribute, block string) ([]string, bool) {
	v, ok := l.value(a, block)
	if !ok {
		return nil, false
	}
	t := v.Type()
	if !t.IsTupleType() && !t.IsListType() {
		l.add(at(a.Expr.Range(), blockOr(block, a.Name), fmt.Sprintf("%s must be a list of strings, got %s", a.Name, t.FriendlyName()), `write ["a", "b"]`))
		return nil, false
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			l.add(at(a.Expr.Range(), blockOr(block, a.Name), a.Name+" must be a list of strings", `write ["a", "b"]`))
			return nil, false
		}
		out = append(out, e.AsString())
	}
	return out, true
}
