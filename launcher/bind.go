package launcher

import (
	"bytes"
	"encoding/json"

	"fmt"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// Bind applies the operator's bindings of tool t (the lock's Tool.Bindings)
// to the caller's values for the declared args: a bound arg's value wins
// over the caller's (the model never sees it in its schema); a literal is
// decoded from the lock, an env binding is read from callerEnv now. It
// returns the values to encode and the secret values to redact from
// anything reported. An env binding whose variable is unset is a
// *RefusedError naming the tool, the arg and the variable.
func Bind(name string, t *manifest.Tool, args []protocol.Arg, values map[string]any, callerEnv []string) (map[string]any, []string, error) {
	if len(t.Bindings) == 0 {
		return values, nil, nil
	}
	out := make(map[string]any, len(values)+len(t.Bindings))
	for k, v := range values {
		if t.Bindings[k] == nil {
			out[k] = v
		}
	}
	var secrets []string
	for _, a := range args {
		b := t.Bindings[a.Name]
		if b == nil {
			continue
		}
		var v any
		switch {
		case b.Env != "":
			s, ok := lookupEnv(callerEnv, b.Env)
			if !ok {
				return nil, nil, &RefusedError{
					What: fmt.Sprintf("tool %q: arg %q is bound to $%s, which is not set", name, a.Name, b.Env),
					Fix:  fmt.Sprintf("set %s in the environment toolbox runs in", b.Env),
				}
			}
			v = s
		default:
			dec := json.NewDecoder(bytes.NewReader(b.Value))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, nil, &RefusedError{What: fmt.Sprintf("tool %q: binding of arg %q: %v", name, a.Name, err), Fix: relockFix}
			}
		}
		out[a.Name] = v
		if b.Secret {
			if s := fmt.Sprint(v); s != "" {
				secrets = append(secrets, s)
			}
		}
	}
	return out, secrets, nil
}

func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// HideSecretArgs rewrites the argument errors of err (a *protocol.ArgError
// or protocol.ArgErrors from ValidateArgs or Encode) that concern an arg
// bound to a secret of t: their problem would quote the value, cut to a
// length a Redactor cannot recognise, so it is replaced by a sentence that
// names the arg only. Other errors are returned as they are.
func HideSecretArgs(t *manifest.Tool, err error) error {
	hide := func(e *protocol.ArgError) *protocol.ArgError {
		if e == nil || t.Bindings[e.Arg] == nil || !t.Bindings[e.Arg].Secret {
			return e
		}
		return &protocol.ArgError{Arg: e.Arg, Problem: "its secret bound value does not fit the arg's type (the value is not shown); fix the binding in the toolbox file, or the variable it reads"}
	}
	switch e := err.(type) {
	case *protocol.ArgError:
		return hide(e)
	case protocol.ArgErrors:
		out := make(protocol.ArgErrors, len(e))
		for i := range e {
			out[i] = hide(e[i])
		}
		return out
	}
	return err
}
