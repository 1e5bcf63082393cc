// Package launcher runs one locked exec tool, oneshot: the library behind
// `toolbox run` (DESIGN.md §2, §4, §7).
//
// A run trusts only the lock. Run resolves the name (a tool, or a
// capability and its active backend after --backend overrides), verifies
// the lock against the world (the toolbox file's and the binary's sha256,
// the platform), refuses a tool that declares runtime.sandbox or run_as
// while its locked mechanism is "none" (it is never run unconfined),
// validates and encodes the arguments with the v1 rules, asks runspec for
// the command and sandbox spec, starts the tool in its own process group
// and waits for it, bounded by the call timeout.
//
// Errors returned before launch are typed so a front-end can map them to
// exit codes with errors.Is/As, or simply with ExitCode: *RefusedError (the
// lock disagrees with the world, or the tool may not run), *ArgError (bad
// argument values), ErrNotFound and ErrNotExecutable (the binary cannot be
// exec'd). A tool that ran and exited non-zero is not an error: the Result
// carries its exit code and the tail of its stderr.
//
// Timeouts: the call timeout is Request.Timeout, else the operator's default
// for the tool (the lock's runtime.timeout_seconds), else DefaultTimeout. On
// expiry (or when the context ends) the tool's declared cancel signal goes
// to its whole process group, then SIGKILL after runtime.timeout.stop
// seconds (DefaultStopGrace when undeclared). An exec stream tool is also
// stopped so when it writes nothing for its runtime.timeout.idle
// (Result.Reason says so), as the daemon and the MCP server stop it. The
// call ends when the tool exits; leftover members of its group are killed
// by the sandbox package, so a grandchild holding stdout cannot hang the
// call.
//
// Output: stdout is the result and stderr never is. A v1 tool's stdout is
// raw bytes; a v2 tool's is framed as it declares (jsonl by default, lines
// or chunks). jsonl lines that fail the declared event schema are
// delivered as invalid events carrying the raw line and the error, never
// dropped.
//
// What it deliberately does not do: read the lock file (the caller passes
// the decoded lock), format output for a terminal or as JSON (cmd/toolbox
// does), run go-plugin tools, or supervise stream and service processes
// beyond a single call; those belong to their own packages and issues.
package launcher
