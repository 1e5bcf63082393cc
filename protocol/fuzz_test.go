package protocol

import (
	"errors"
	"strings"
	"testing"
)

// fuzzModes and fuzzBacking are what FuzzEncode's layout bytes pick from;
// index 5 of fuzzModes is not a mode at all.
var (
	fuzzModes   = []string{ModePositional, ModeDashDashSpace, ModeDashDashEqual, ModeStdin, ModeEnv, "bogus"}
	fuzzBacking = []string{BackingString, BackingInteger, BackingNumber, BackingBoolean, "other"}
)

// FuzzEncode: Encode never panics, and when it succeeds the invocation has
// exactly what the v1 rules say: per present value, one argv entry for
// positional and dashdashequal, two for dashdashspace, one env entry for
// env, one "value\n" on stdin (nil stdin when there is none), in
// declaration order. Args are built from layout (3 bytes each: mode,
// arity, backing type) and names (comma-separated); values is the JSON
// object of the call. The seed corpus is in testdata/fuzz/FuzzEncode.
func FuzzEncode(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 1}, "a,b", []byte(`{"a":"x","b":2}`))
	f.Fuzz(func(t *testing.T, layout []byte, names string, values []byte) {
		nameList := strings.Split(names, ",")
		var args []Arg
		for i := 0; i+2 < len(layout) && len(args) < len(nameList) && len(args) < 16; i += 3 {
			arity := AritySingle
			if layout[i+1]%2 == 1 {
				arity = ArityOptional
			}
			args = append(args, Arg{
				Name:        nameList[len(args)],
				Mode:        fuzzModes[int(layout[i])%len(fuzzModes)],
				Arity:       arity,
				BackingType: fuzzBacking[int(layout[i+2])%len(fuzzBacking)],
			})
		}
		vals, err := DecodeArgs(values)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("DecodeArgs error is not an *ArgError: %T %v", err, err)
			}
			return
		}
		validateErr := ValidateArgs(args, vals)
		inv, err := Encode(args, vals)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("Encode error is not an *ArgError: %T %v", err, err)
			}
			return
		}
		if validateErr != nil {
			t.Fatalf("Encode succeeded where ValidateArgs failed: %v", validateErr)
		}
		var wantArgv, wantEnv, stdinValues int
		var argvNames []string // the flag entries Encode must have written
		for _, a := range args {
			if v, ok := vals[a.Name]; !ok || v == nil {
				continue
			}
			switch a.Mode {
			case ModePositional:
				wantArgv++
				argvNames = append(argvNames, "")
			case ModeDashDashSpace:
				wantArgv += 2
				argvNames = append(argvNames, "--"+a.Name, "")
			case ModeDashDashEqual:
				wantArgv++
				argvNames = append(argvNames, "--"+a.Name+"=")
			case ModeStdin:
				stdinValues++
			case ModeEnv:
				wantEnv++
			}
		}
		if len(inv.Argv) != wantArgv || len(inv.Env) != wantEnv {
			t.Fatalf("argv %q env %q; want %d argv and %d env entries", inv.Argv, inv.Env, wantArgv, wantEnv)
		}
		for i, prefix := range argvNames {
			if !strings.HasPrefix(inv.Argv[i], prefix) {
				t.Fatalf("argv[%d] = %q, want prefix %q (argv %q)", i, inv.Argv[i], prefix, inv.Argv)
			}
		}
		if (stdinValues == 0) != (inv.Stdin == nil) || stdinValues > 0 && inv.Stdin[len(inv.Stdin)-1] != '\n' {
			t.Fatalf("stdin %q for %d stdin values", inv.Stdin, stdinValues)
		}
		if stdinValues > 0 && strings.Count(string(inv.Stdin), "\n") < stdinValues {
			t.Fatalf("stdin %q has fewer lines than its %d values", inv.Stdin, stdinValues)
		}
		for _, e := range inv.Env {
			if name, _, ok := strings.Cut(e, "="); !ok || !validVarName(name) {
				t.Fatalf("env entry %q has no valid name", e)
			}
		}
	})
}
