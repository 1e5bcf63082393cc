// Package protocol is the tool protocol of DESIGN.md §2: the describe
// documents a tool prints (v1, and v2 with "protocol": 2), what `TOOL check`
// prints, and how a call's JSON arguments become the argv, stdin and
// environment of `TOOL run`.
//
// It exists so that the compiler (which probes tools and writes the lock)
// and the launcher (which runs them) agree on one reading of the protocol
// without importing each other.
//
// Two costs are kept apart on purpose, in two packages. Package
// protocol/validate holds everything that needs a JSON Schema validator
// (ParseDescribe, CompileEventSchema): it is meant for lock time and for the
// long-running servers, and it links santhosh-tekuri/jsonschema, whose
// package init compiles every draft's meta-schema (about 4 ms at each
// program start). This package does not import it, so `toolbox run` does
// not pay that: DecodeArgs, ValidateArgs and Encode run on every call as
// hand-written checks that cost microseconds.
//
// Decisions where DESIGN.md is silent, in one place:
//   - In a v1 document the v2-only keys (process, runtime, commands, check)
//     are ignored like any unknown key. In v2 the top level and args still
//     ignore unknown keys, but the objects v2 adds reject them, so that a
//     misspelt timeout or sandbox key is an error rather than a silent no-op.
//   - An "integer" arg takes a JSON number with a whole value (12, 12.0,
//     1.2e1) within int64, passed to the tool as canonical decimal text, or
//     a string that is one ("12", as agents-exe takes it); " 12" or "1.5"
//     is refused with the fix. "boolean" takes true/false or "true"/"false".
//     Unknown backing types are treated as "string". null counts as absent.
//   - Env-mode arg names must map to a POSIX name that is not reserved
//     (see EnvName); this is checked at describe time and again by Encode.
//   - Timeouts are at most 366 days and digest.n fits 32 bits. JSON numbers
//     in a describe document or an event must have at most 1000 characters
//     and an exponent within ±1000, which keeps the schema validator fast
//     and away from a panic it has on larger exponents.
//
// It deliberately does not run tools, read the lock, frame output streams
// or decide what a probe result means: the launcher and the compiler do.
// Nor does it protect a tool from its own arguments: a positional value that
// starts with "-" is passed as it is, as v1 says; a tool that must not read
// it as a flag should declare the argument in a flag mode or stdin.
package protocol
