package validate

import (
	"github.com/toolbox-dev/toolbox/protocol"

	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"regexp"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validCommandName reports whether name matches ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$:
// the tool it defines is called slug.name, and MCP clients accept only
// [a-zA-Z0-9_-] in tool names, so dots and spaces are out. (Hand-written
// rather than a package-level regexp, which every process would compile.)
func validCommandName(name string) bool {
	if name == "" || len(name) > 64 || name[0] == '_' || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// semantics collects the problems a JSON Schema cannot express. It reads the
// decoded document defensively: a value of the wrong type was already
// reported by the schema and is skipped here.
type semantics struct {
	probs []problem
}

func (s *semantics) add(ptr []string, format string, args ...any) {
	s.probs = append(s.probs, problem{ptr: ptr, msg: fmt.Sprintf(format, args...)})
}

func checkSemantics(obj map[string]any, v2 bool) []problem {
	s := &semantics{}
	if args, ok := obj["args"].([]any); ok {
		s.args(args, []string{"args"})
	}
	if mt, ok := obj["output-media-type"].(string); ok {
		if _, _, err := mime.ParseMediaType(mt); err != nil {
			s.add([]string{"output-media-type"}, "%q is not a media type; write one such as \"text/plain\" or \"application/json\"", mt)
		}
	}
	if !v2 {
		return s.probs
	}
	if cmds, ok := obj["commands"].([]any); ok {
		s.commands(cmds)
	}
	var input *jsonschema.Schema
	if proc, ok := obj["process"].(map[string]any); ok {
		input = s.process(proc)
	}
	if rt, ok := obj["runtime"].(map[string]any); ok {
		if env, ok := rt["environment"].(map[string]any); ok {
			for name := range env {
				if !protocol.ValidVarName(name) {
					s.add([]string{"runtime", "environment", name}, "%q is not a valid environment variable name; use letters, digits and '_', not starting with a digit", name)
				}
			}
		}
		if c, ok := rt["cancel"]; ok {
			s.cancel(c, input)
		}
		if n, ok := rt["concurrency"].(json.Number); ok {
			if _, err := strconv.Atoi(n.String()); err != nil {
				s.add([]string{"runtime", "concurrency"}, "%s: write a whole number without fraction or exponent", n)
			}
		}
		s.workspacePaths(rt)
	}
	return s.probs
}

// args checks one argument list: unique names, and for env-mode args a
// valid, unique, unreserved variable name.
func (s *semantics) args(args []any, at []string) {
	names := map[string]int{}
	envs := map[string]int{}
	for i, a := range args {
		arg, ok := a.(map[string]any)
		if !ok {
			continue
		}
		name, ok := arg["name"].(string)
		if !ok || name == "" {
			continue
		}
		here := ptr(at, strconv.Itoa(i), "name")
		if j, dup := names[name]; dup {
			s.add(here, "duplicate arg name %q (first declared at %s); rename one", name, displayPointer(ptr(at, strconv.Itoa(j))))
			continue
		}
		names[name] = i
		if mode, _ := arg["mode"].(string); mode != protocol.ModeEnv {
			continue
		}
		env, err := protocol.EnvName(name)
		if err != nil {
			s.add(here, "env-mode arg %q: %v", name, err)
			continue
		}
		if j, dup := envs[env]; dup {
			s.add(here, "env-mode arg %q sets $%s, as %s does; rename one", name, env, displayPointer(ptr(at, strconv.Itoa(j))))
			continue
		}
		envs[env] = i
	}
}

// ptr returns a new pointer: base followed by more (base is not modified).
func ptr(base []string, more ...string) []string {
	return append(append(make([]string, 0, len(base)+len(more)), base...), more...)
}

// commands checks command names (valid, unique) and each command's args.
func (s *semantics) commands(cmds []any) {
	seen := map[string]int{}
	for i, c := range cmds {
		cmd, ok := c.(map[string]any)
		if !ok {
			continue
		}
		at := []string{"commands", strconv.Itoa(i)}
		if name, ok := cmd["name"].(string); ok {
			switch j, dup := seen[name]; {
			case !validCommandName(name):
				s.add(ptr(at, "name"), "%q is not a valid command name; use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit (the tool is called slug.name)", name)
			case dup:
				s.add(ptr(at, "name"), "duplicate command name %q (first declared at /commands/%d); rename one", name, j)
			default:
				seen[name] = i
			}
		}
		if args, ok := cmd["args"].([]any); ok {
			s.args(args, ptr(at, "args"))
		}
	}
}

// process checks ready, digest and the event schemas. It returns the
// compiled input.event schema, or nil when none is declared or it does not
// compile.
func (s *semantics) process(proc map[string]any) *jsonschema.Schema {
	if ready, ok := proc["ready"].(map[string]any); ok && ready["kind"] == "line" {
		switch m, ok := ready["match"].(string); {
		case !ok:
			if _, present := ready["match"]; !present {
				s.add([]string{"process", "ready"}, "kind \"line\" needs \"match\", a regular expression tested on each stdout line")
			}
		case m == "":
			s.add([]string{"process", "ready", "match"}, "must not be empty; give the regular expression of the line that says the service is ready")
		default:
			if _, err := regexp.Compile(m); err != nil {
				s.add([]string{"process", "ready", "match"}, "not a valid Go regular expression: %v", err)
			}
		}
	}
	if digest, ok := proc["digest"].(map[string]any); ok {
		s.digest(digest)
	}
	if out, ok := proc["output"].(map[string]any); ok {
		if ev, ok := out["event"]; ok {
			s.eventSchema(ev, []string{"process", "output", "event"})
		}
	}
	if in, ok := proc["input"].(map[string]any); ok {
		if ev, ok := in["event"]; ok {
			return s.eventSchema(ev, []string{"process", "input", "event"})
		}
	}
	return nil
}

func (s *semantics) digest(digest map[string]any) {
	at := []string{"process", "digest"}
	per, _ := digest["per"].(string)
	raw, present := digest["n"]
	num, isNum := raw.(json.Number)
	if present && isNum {
		if _, err := strconv.Atoi(num.String()); err != nil {
			s.add(ptr(at, "n"), "%s: write a whole number without fraction or exponent", num)
			return
		}
	}
	if per != "events" && per != "seconds" {
		return
	}
	switch {
	case !present:
		s.add(at, "per %q needs \"n\", a number greater than 0 (e.g. \"n\": 10)", per)
	case isNum && num.String() == "0":
		s.add(ptr(at, "n"), "must be greater than 0 when per is %q", per)
	}
}

// eventSchema compiles a declared event schema and reports why it does not
// compile, located inside it.
func (s *semantics) eventSchema(ev any, at []string) *jsonschema.Schema {
	switch ev.(type) {
	case map[string]any, bool:
	default:
		return nil // the describe schema reported the type
	}
	if msg := schemaLimitProblem(ev); msg != "" {
		s.add(at, "%s", msg)
		return nil
	}
	sch, err := compileSchemaValue(ev)
	if err == nil {
		return sch
	}
	var sverr *jsonschema.SchemaValidationError
	var verr *jsonschema.ValidationError
	if errors.As(err, &sverr) && errors.As(sverr.Err, &verr) {
		for _, p := range schemaProblems(verr, at, nil) {
			s.add(p.ptr, "not a valid JSON Schema: %s", p.msg)
		}
		return nil
	}
	s.add(at, "does not compile as a JSON Schema: %v", err)
	return nil
}

// cancel checks runtime.cancel: a signal name, or {"send": EVENT} with the
// event valid against input.event when one is declared.
func (s *semantics) cancel(c any, input *jsonschema.Schema) {
	at := []string{"runtime", "cancel"}
	switch c := c.(type) {
	case string:
		if c != protocol.SignalTerm && c != protocol.SignalInt {
			s.add(at, "%q is not one of %s, %s or {\"send\": EVENT}", c, protocol.SignalTerm, protocol.SignalInt)
		}
	case map[string]any:
		ev, ok := c["send"]
		if !ok {
			s.add(at, "missing required key \"send\"; write {\"send\": EVENT} or a signal name (%s, %s)", protocol.SignalTerm, protocol.SignalInt)
		}
		for k := range c {
			if k != "send" {
				s.add(ptr(at, k), "unknown key %q; allowed keys: send", k)
			}
		}
		if ok && ev == nil {
			s.add(ptr(at, "send"), "null is not an event; write the event the process reads to stop")
			return
		}
		if !ok || input == nil {
			return
		}
		if err := validateSafely(input, ev); err != nil {
			var verr *jsonschema.ValidationError
			if errors.As(err, &verr) {
				for _, p := range schemaProblems(verr, ptr(at, "send"), nil) {
					s.add(p.ptr, "does not match process.input.event: %s", p.msg)
				}
				return
			}
			s.add(ptr(at, "send"), "does not match process.input.event: %v", err)
		}
	}
}
