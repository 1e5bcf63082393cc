package launcher

import (
	"bytes"
	"encoding/json"

	"fmt"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// Redacted replaces a secret bound value wherever toolbox reports text.
const Redacted = "[redacted]"

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

// redact replaces every secret in s.
func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, Redacted)
	}
	return s
}

// redactedError reports err with the secrets replaced; errors.Is/As still
// reach the causes.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactErr(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := redact(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactResult removes the secrets from every text of r that toolbox
// reports (stderr tail, events, lines, message, text output).
func redactResult(r *Result, secrets []string) {
	if r == nil || len(secrets) == 0 {
		return
	}
	r.StderrTail = redact(r.StderrTail, secrets)
	r.Message = redact(r.Message, secrets)
	if !r.Binary && r.Output != nil {
		r.Output = []byte(redact(string(r.Output), secrets))
	}
	for i := range r.Lines {
		r.Lines[i] = redact(r.Lines[i], secrets)
	}
	for i, e := range r.Events {
		e.Raw, e.Error = redact(e.Raw, secrets), redact(e.Error, secrets)
		if e.Event != nil {
			if red := redact(string(e.Event), secrets); red != string(e.Event) {
				e.Event = nil
				e.Invalid, e.Raw, e.Error = true, red, "the event contained a secret bound value and was redacted"
			}
		}
		r.Events[i] = e
	}
}
