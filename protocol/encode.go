package protocol

import (
	"fmt"
	"strings"
)

// Invocation is one encoded call (DESIGN.md §2, v1 rules).
type Invocation struct {
	// Argv is what follows `TOOL run`; it does not hold the "run" verb.
	// nil when no value is passed in argv.
	Argv []string
	// Stdin is what the tool reads on stdin: each stdin-mode value followed
	// by "\n", in declaration order. nil means empty: stdin is closed at once.
	Stdin []byte
	// Env holds "NAME=value" for env-mode args, in declaration order, to add
	// to the tool's environment; nil when there are none.
	Env []string
}

// Encode validates values with ValidateArgs (returning its ArgErrors) and
// encodes them with the v1 rules, in declaration order:
//
//	positional     value
//	dashdashspace  "--name", value
//	dashdashequal  "--name=value"
//	stdin          nothing in argv; value + "\n" on stdin
//	env            NAME=value, NAME from EnvName
//
// The flag is "--" + the arg name verbatim. A missing or null optional arg
// emits nothing; an empty string is passed as an empty value. Numbers and
// booleans are passed as their JSON text (a json.Number keeps its own text),
// except that an integer-typed arg gets its canonical decimal form (12.0 and
// 1.2e1 become 12). An arg whose mode is unknown or whose env name is not
// usable is an *ArgError.
func Encode(args []Arg, values map[string]any) (Invocation, error) {
	if err := ValidateArgs(args, values); err != nil {
		return Invocation{}, err
	}
	var inv Invocation
	for _, a := range args {
		v, ok := values[a.Name]
		if !ok || v == nil {
			continue
		}
		text, _ := renderValue(a, v) // validated above
		switch a.Mode {
		case ModePositional:
			inv.Argv = append(inv.Argv, text)
		case ModeDashDashSpace:
			inv.Argv = append(inv.Argv, "--"+a.Name, text)
		case ModeDashDashEqual:
			inv.Argv = append(inv.Argv, "--"+a.Name+"="+text)
		case ModeStdin:
			inv.Stdin = append(append(inv.Stdin, text...), '\n')
		case ModeEnv:
			name, err := EnvName(a.Name)
			if err != nil {
				return Invocation{}, &ArgError{Arg: a.Name, Problem: err.Error()}
			}
			inv.Env = append(inv.Env, name+"="+text)
		default:
			return Invocation{}, &ArgError{Arg: a.Name, Problem: fmt.Sprintf("declares mode %q, which is not one of positional, dashdashspace, dashdashequal, stdin, env; fix the tool's describe", a.Mode)}
		}
	}
	return inv, nil
}

// reservedEnv are variables an env-mode arg may not set, because a value
// chosen by the caller would change how the tool, its dynamic loader or its
// shell starts, or would overwrite what the launcher itself passes.
var reservedEnv = []string{"PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS"}

// reservedEnvPrefixes are the prefixes of reserved variable names.
var reservedEnvPrefixes = []string{"LD_", "TOOLBOX_", "AGENT_"}

// EnvName maps an env-mode arg name to its variable name (DESIGN.md §2:
// upper-cased, '-' → '_'), and refuses a result that is not a POSIX name
// ([A-Z_][A-Z0-9_]*) or that is reserved: PATH, IFS, ENV, BASH_ENV,
// SHELLOPTS, BASHOPTS and any LD_*, TOOLBOX_* or AGENT_* name.
func EnvName(arg string) (string, error) {
	name := envVarName(arg)
	return name, checkEnvName(name)
}

func envVarName(arg string) string {
	return strings.ReplaceAll(strings.ToUpper(arg), "-", "_")
}

// validVarName reports whether name is a POSIX variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func validVarName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return name != ""
}

func checkEnvName(name string) error {
	if !validVarName(name) {
		return fmt.Errorf("%q is not a valid environment variable name (letters, digits and '_', not starting with a digit); rename the arg", name)
	}
	for _, r := range reservedEnv {
		if name == r {
			return fmt.Errorf("$%s is reserved (it changes how programs start); rename the arg", name)
		}
	}
	for _, p := range reservedEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("$%s is reserved (names starting with %s are); rename the arg", name, p)
		}
	}
	return nil
}

// ValidVarName reports whether name is a POSIX variable name
// ([A-Za-z_][A-Za-z0-9_]*), as environment keys must be.
func ValidVarName(name string) bool { return validVarName(name) }
