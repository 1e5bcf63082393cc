package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

var bindSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "value"}, {Name: "env"}, {Name: "secret"}},
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// bindings reads a tool block's bind blocks: exactly one of value (a
// string, number or bool literal) and env (a variable name read from the
// caller's environment at run time), and an optional secret flag.
func (l *loader) bindings(t *ToolDecl, c *hcl.BodyContent, block string) bool {
	ok := true
	seen := map[string]bool{}
	for _, b := range c.Blocks {
		if b.Type != "bind" {
			continue
		}
		bd := &BindDecl{Arg: b.Labels[0], Range: b.DefRange}
		where := fmt.Sprintf("%s, bind %q", block, bd.Arg)
		if seen[bd.Arg] {
			l.add(at(b.LabelRanges[0], where, "the arg is bound twice", "keep one bind block per arg"))
			ok = false
			continue
		}
		seen[bd.Arg] = true
		bc, hd := b.Body.Content(bindSchema)
		if hd.HasErrors() {
			l.diags = append(l.diags, fromHCL(hd, where)...)
			ok = false
			continue
		}
		va, ea := bc.Attributes["value"], bc.Attributes["env"]
		switch {
		case (va == nil) == (ea == nil):
			l.add(at(b.DefRange, where, "set exactly one of value and env", `write value = "..." for a literal, or env = "VAR" to read $VAR at run time`))
			ok = false
			continue
		case va != nil:
			v, vok := l.value(va, where)
			if !vok {
				ok = false
				continue
			}
			if ty := v.Type(); ty != cty.String && ty != cty.Number && ty != cty.Bool {
				l.add(at(va.Expr.Range(), where, fmt.Sprintf("value must be a string, number or bool, got %s", ty.FriendlyName()), "bind a literal"))
				ok = false
				continue
			}
			raw, err := ctyjson.Marshal(v, v.Type())
			if err != nil {
				l.add(at(va.Expr.Range(), where, err.Error(), "bind a literal"))
				ok = false
				continue
			}
			bd.Value = raw
		default:
			name, sok := l.str(ea, where)
			if !sok {
				ok = false
				continue
			}
			if !envNamePattern.MatchString(name) {
				l.add(at(ea.Expr.Range(), where, fmt.Sprintf("invalid variable name %q", name), "use letters, digits and '_', not starting with a digit"))
				ok = false
				continue
			}
			bd.Env = name
		}
		if sa := bc.Attributes["secret"]; sa != nil {
			secret, sok := l.boolean(sa, where)
			if !sok {
				ok = false
				continue
			}
			bd.Secret = secret
		}
		t.Bindings = append(t.Bindings, bd)
	}
	return ok
}

// exitCodes reads fallback_on: a list of exit codes 1..255.
func (l *loader) exitCodes(a *hcl.Attribute, block string) []int {
	v, ok := l.value(a, block)
	if !ok {
		return nil
	}
	if !v.Type().IsTupleType() && !v.Type().IsListType() {
		l.add(at(a.Expr.Range(), block, "fallback_on must be a list of exit codes", "write fallback_on = [75, 69]"))
		return nil
	}
	var out []int
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.Number {
			l.add(at(a.Expr.Range(), block, "fallback_on must be a list of exit codes", "write fallback_on = [75, 69]"))
			return nil
		}
		n, acc := e.AsBigFloat().Int64()
		if acc != 0 || n < 1 || n > 255 {
			l.add(at(a.Expr.Range(), block, fmt.Sprintf("fallback_on: %s is not an exit code", e.AsBigFloat().String()), "use whole numbers from 1 to 255"))
			return nil
		}
		out = append(out, int(n))
	}
	return out
}

// lockBindings checks a tool's bindings against its described args (any
// command's, for a multi-command tool) and returns them for the lock. A
// secret binding of an argv-mode arg is refused: it would show in ps.
func lockBindings(t *ToolDecl, d *protocol.Describe) (map[string]*manifest.Binding, error) {
	if len(t.Bindings) == 0 {
		return nil, nil
	}
	out := map[string]*manifest.Binding{}
	for _, b := range t.Bindings {
		where := fmt.Sprintf("%s, bind %q", t.Block, b.Arg)
		var found []protocol.Arg
		for _, args := range allArgLists(d) {
			for _, a := range args {
				if a.Name == b.Arg {
					found = append(found, a)
				}
			}
		}
		if len(found) == 0 {
			return nil, at(b.Range, where, fmt.Sprintf("the tool declares no arg %q", b.Arg), "bind one of the args its describe document lists")
		}
		for _, a := range found {
			if b.Secret && a.Mode != protocol.ModeEnv && a.Mode != protocol.ModeStdin {
				return nil, at(b.Range, where, fmt.Sprintf("a secret cannot be bound to arg %q of mode %s: argv is visible to every process (ps, /proc/PID/cmdline)", b.Arg, a.Mode), "bind secrets only to env or stdin mode args, or drop secret = true")
			}
			if b.Value != nil {
				var v any
				dec := json.NewDecoder(bytes.NewReader(b.Value))
				dec.UseNumber()
				if err := dec.Decode(&v); err == nil {
					if err := protocol.ValidateArgs([]protocol.Arg{a}, map[string]any{a.Name: v}); err != nil {
						return nil, at(b.Range, where, fmt.Sprintf("the bound value does not fit the arg: %v", err), "bind a value of the arg's backing_type ("+a.BackingType+")")
					}
				}
			}
		}
		out[b.Arg] = &manifest.Binding{Value: b.Value, Env: b.Env, Secret: b.Secret}
	}
	return out, nil
}

// allArgLists is the tool's own args and each command's.
func allArgLists(d *protocol.Describe) [][]protocol.Arg {
	lists := [][]protocol.Arg{d.Args}
	for _, c := range d.Commands {
		lists = append(lists, c.Args)
	}
	return lists
}

// unbound is args without the bound ones: what the model sees.
func unbound(args []protocol.Arg, b map[string]*manifest.Binding) []protocol.Arg {
	if len(b) == 0 {
		return args
	}
	out := make([]protocol.Arg, 0, len(args))
	for _, a := range args {
		if b[a.Name] == nil {
			out = append(out, a)
		}
	}
	return out
}
