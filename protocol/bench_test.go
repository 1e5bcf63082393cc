package protocol

import "testing"

// BenchmarkValidateAndEncode measures what `toolbox run` pays per call for
// its arguments: decoding the caller's JSON, validating it and encoding it
// for a tool with six args of every mode and backing type.
func BenchmarkValidateAndEncode(b *testing.B) {
	args := []Arg{
		{Name: "path", BackingType: "string", Arity: AritySingle, Mode: ModePositional},
		{Name: "start", BackingType: "integer", Arity: ArityOptional, Mode: ModeDashDashEqual},
		{Name: "end", BackingType: "integer", Arity: ArityOptional, Mode: ModeDashDashSpace},
		{Name: "ratio", BackingType: "number", Arity: ArityOptional, Mode: ModeDashDashSpace},
		{Name: "ignore-case", BackingType: "boolean", Arity: ArityOptional, Mode: ModeEnv},
		{Name: "text", BackingType: "string", Arity: ArityOptional, Mode: ModeStdin},
	}
	input := []byte(`{"path":"internal/protocol/args.go","start":10,"end":40.0,"ratio":0.5,"ignore-case":true,"text":"hello"}`)
	b.Run("decode+validate+encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			values, err := DecodeArgs(input)
			if err != nil {
				b.Fatal(err)
			}
			if err := ValidateArgs(args, values); err != nil {
				b.Fatal(err)
			}
			if _, err := Encode(args, values); err != nil {
				b.Fatal(err)
			}
		}
	})
	values, err := DecodeArgs(input)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("validate+encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := ValidateArgs(args, values); err != nil {
				b.Fatal(err)
			}
			if _, err := Encode(args, values); err != nil {
				b.Fatal(err)
			}
		}
	})
}
