package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func arg(name, backingType, arity, mode string) Arg {
	return Arg{Name: name, Description: "d", Type: "t", BackingType: backingType, Arity: arity, Mode: mode}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name  string
		args  []Arg
		in    string
		argv  []string
		stdin string // "<nil>" for nil
		env   []string
	}{
		{"positional", []Arg{arg("path", "string", AritySingle, ModePositional)},
			`{"path":"a b.txt"}`, []string{"a b.txt"}, "<nil>", nil},
		{"dashdashspace", []Arg{arg("max-count", "integer", AritySingle, ModeDashDashSpace)},
			`{"max-count":3}`, []string{"--max-count", "3"}, "<nil>", nil},
		{"dashdashequal", []Arg{arg("color", "string", AritySingle, ModeDashDashEqual)},
			`{"color":"auto"}`, []string{"--color=auto"}, "<nil>", nil},
		{"stdin", []Arg{arg("text", "string", AritySingle, ModeStdin)},
			`{"text":"hello"}`, nil, "hello\n", nil},
		{"env", []Arg{arg("ignore-case", "boolean", AritySingle, ModeEnv)},
			`{"ignore-case":true}`, nil, "<nil>", []string{"IGNORE_CASE=true"}},
		{"env name kept mixed case letters upper-cased", []Arg{arg("myVar_2", "string", AritySingle, ModeEnv)},
			`{"myVar_2":"v=w"}`, nil, "<nil>", []string{"MYVAR_2=v=w"}},
		{"declaration order, not object order",
			[]Arg{arg("a", "string", AritySingle, ModePositional), arg("b", "string", AritySingle, ModeDashDashSpace), arg("c", "string", AritySingle, ModePositional)},
			`{"c":"3","b":"2","a":"1"}`, []string{"1", "--b", "2", "3"}, "<nil>", nil},
		{"several stdin values, each followed by a newline",
			[]Arg{arg("s1", "string", AritySingle, ModeStdin), arg("p", "string", AritySingle, ModePositional), arg("s2", "string", AritySingle, ModeStdin)},
			`{"s2":"second\nline","s1":"first","p":"x"}`, []string{"x"}, "first\nsecond\nline\n", nil},
		{"empty strings are passed",
			[]Arg{arg("p", "string", AritySingle, ModePositional), arg("s", "string", AritySingle, ModeDashDashSpace),
				arg("e", "string", AritySingle, ModeDashDashEqual), arg("i", "string", AritySingle, ModeStdin), arg("v", "string", AritySingle, ModeEnv)},
			`{"p":"","s":"","e":"","i":"","v":""}`, []string{"", "--s", "", "--e="}, "\n", []string{"V="}},
		{"missing and null optional args emit nothing",
			[]Arg{arg("p", "string", ArityOptional, ModePositional), arg("s", "string", ArityOptional, ModeDashDashSpace),
				arg("e", "string", ArityOptional, ModeDashDashEqual), arg("i", "string", ArityOptional, ModeStdin), arg("v", "string", ArityOptional, ModeEnv)},
			`{"s":null,"i":null}`, nil, "<nil>", nil},
		{"no args", nil, `{}`, nil, "<nil>", nil},
		{"unicode passes byte for byte",
			[]Arg{arg("q", "string", AritySingle, ModePositional), arg("w", "string", AritySingle, ModeDashDashEqual), arg("x", "string", AritySingle, ModeEnv), arg("y", "string", AritySingle, ModeStdin)},
			`{"q":"héllo wörld ✓ 日本","w":"Ω","x":"🙂","y":"\u00e9"}`, []string{"héllo wörld ✓ 日本", "--w=Ω"}, "é\n", []string{"X=🙂"}},
		{"numbers keep their JSON text; integers become canonical",
			[]Arg{arg("n", "number", AritySingle, ModePositional), arg("i", "integer", AritySingle, ModePositional),
				arg("s", "string", AritySingle, ModePositional), arg("big", "string", AritySingle, ModePositional), arg("neg", "integer", AritySingle, ModePositional)},
			`{"n":1.50,"i":1.2e1,"s":2E+3,"big":123456789012345678901234567890,"neg":-0}`,
			[]string{"1.50", "12", "2E+3", "123456789012345678901234567890", "0"}, "<nil>", nil},
		{"booleans as their JSON text, also for string args",
			[]Arg{arg("b", "boolean", AritySingle, ModeDashDashEqual), arg("s", "string", AritySingle, ModeDashDashEqual)},
			`{"b":false,"s":true}`, []string{"--b=false", "--s=true"}, "<nil>", nil},
		{"values that look like flags pass as they are",
			[]Arg{arg("p", "string", AritySingle, ModePositional)}, `{"p":"--help"}`, []string{"--help"}, "<nil>", nil},
		{"a NUL byte is fine on stdin",
			[]Arg{arg("i", "string", AritySingle, ModeStdin)}, `{"i":"a\u0000b"}`, nil, "a\x00b\n", nil},
		{"unknown backing type is a string",
			[]Arg{arg("d", "date", AritySingle, ModeDashDashSpace)}, `{"d":"2024-01-01"}`, []string{"--d", "2024-01-01"}, "<nil>", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, err := DecodeArgs([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			inv, err := Encode(tt.args, values)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(inv.Argv, tt.argv) {
				t.Errorf("Argv = %q, want %q", inv.Argv, tt.argv)
			}
			stdin := "<nil>"
			if inv.Stdin != nil {
				stdin = string(inv.Stdin)
			}
			if stdin != tt.stdin {
				t.Errorf("Stdin = %q, want %q", stdin, tt.stdin)
			}
			if !reflect.DeepEqual(inv.Env, tt.env) {
				t.Errorf("Env = %q, want %q", inv.Env, tt.env)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		args []Arg
		in   string
		want string
	}{
		{"invalid values are ValidateArgs' errors", []Arg{arg("n", "integer", AritySingle, ModePositional)},
			`{"n":"one","x":2}`, `argument "n": got the string "one"; pass a whole number such as 12; argument "x": unknown argument; valid arguments: n`},
		{"env name not POSIX", []Arg{arg("a.b", "string", AritySingle, ModeEnv)},
			`{"a.b":"x"}`, `argument "a.b": "A.B" is not a valid environment variable name (letters, digits and '_', not starting with a digit); rename the arg`},
		{"env name starting with a digit", []Arg{arg("1x", "string", AritySingle, ModeEnv)},
			`{"1x":"x"}`, `argument "1x": "1X" is not a valid environment variable name (letters, digits and '_', not starting with a digit); rename the arg`},
		{"env name not ASCII", []Arg{arg("é", "string", AritySingle, ModeEnv)},
			`{"é":"x"}`, `argument "é": "É" is not a valid environment variable name (letters, digits and '_', not starting with a digit); rename the arg`},
		{"env name reserved", []Arg{arg("ld-library-path", "string", AritySingle, ModeEnv)},
			`{"ld-library-path":"/tmp"}`, `argument "ld-library-path": $LD_LIBRARY_PATH is reserved (names starting with LD_ are); rename the arg`},
		{"env name reserved exactly", []Arg{arg("bash-env", "string", AritySingle, ModeEnv)},
			`{"bash-env":"/tmp/x"}`, `argument "bash-env": $BASH_ENV is reserved (it changes how programs start); rename the arg`},
		{"unknown mode", []Arg{arg("x", "string", AritySingle, "flag")},
			`{"x":"1"}`, `argument "x": declares mode "flag", which is not one of positional, dashdashspace, dashdashequal, stdin, env; fix the tool's describe`},
		{"NUL in env", []Arg{arg("v", "string", AritySingle, ModeEnv)},
			`{"v":"a\u0000"}`, `argument "v": contains a NUL byte, which env mode cannot pass (argv and environment strings end at NUL); remove it`},
		{"NUL in a flag", []Arg{arg("v", "string", AritySingle, ModeDashDashEqual)},
			`{"v":"\u0000"}`, `argument "v": contains a NUL byte, which dashdashequal mode cannot pass (argv and environment strings end at NUL); remove it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, err := DecodeArgs([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			inv, err := Encode(tt.args, values)
			if err == nil {
				t.Fatalf("Encode accepted: %+v", inv)
			}
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T is not an *ArgError: %v", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
			if !reflect.DeepEqual(inv, Invocation{}) {
				t.Errorf("a failed Encode returned %+v", inv)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	for _, tt := range []struct{ arg, name, err string }{
		{"api-key", "API_KEY", ""},
		{"_private", "_PRIVATE", ""},
		{"x9", "X9", ""},
		{"", "", "not a valid environment variable name"},
		{"a b", "A B", "not a valid"},
		{"toolbox-session", "TOOLBOX_SESSION", "reserved"},
		{"agent-id", "AGENT_ID", "reserved"},
		{"ifs", "IFS", "reserved"},
		{"path", "PATH", "reserved"},
		{"pathname", "PATHNAME", ""},
	} {
		name, err := EnvName(tt.arg)
		if name != tt.name || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("EnvName(%q) = %q, %v; want %q, %q", tt.arg, name, err, tt.name, tt.err)
		}
	}
}
