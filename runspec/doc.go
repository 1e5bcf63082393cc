// Package runspec turns one locked tool into the child process that runs
// it: the binary's path, its argv, its environment, its working directory
// and the sandbox spec. The compiler calls Prepare to run describe and
// check under the tool's real runtime, and the launcher calls it to run the
// tool, so probes and runs cannot drift apart. It must stay cheap: no
// schema compiled, no HCL parsed, nothing hashed (the caller opens and
// checks the binary, and sets the Command's Exe).
//
// # Paths
//
// The lock's paths (the binary, runtime envdir and rundir) are slash paths
// relative to the lock's directory unless absolute. The describe document's
// sandbox paths (runtime.sandbox.fs.read and .write) are relative to the
// tool's own directory (the binary's directory) unless absolute; all are
// cleaned.
//
// # Argv
//
// argv is the verb followed by Params.Argv. For a tool that is one command
// of a multi-command binary (Tool.Command set), "run" and "help" get the
// command name right after the verb — `TOOL run NAME ARGS…`,
// `TOOL help NAME` — while "describe" and "check" are questions about the
// whole binary and get no command name.
//
// # Environment
//
// Built in this order, each step overriding the one before (DESIGN.md §2):
//
//  1. The base. A tool whose describe document declares runtime.sandbox
//     gets only the allowlisted variables of the caller's environment
//     (DefaultAllowlist, or the toolbox file's env_allowlist when set), and
//     HOME set to its rundir when it has one, else to its own directory,
//     even when env_allowlist names HOME: the caller's HOME is not in its
//     sandbox. A tool that declares no
//     sandbox gets the caller's whole environment (v1 behaviour), or only
//     the env_allowlist variables when the toolbox file sets one (then
//     HOME only if allowlisted).
//  2. The envdir (daemontools rules, see ReadEnvdir); an empty file unsets.
//  3. runtime.environment of the describe document.
//  4. Env-mode arguments (Params.ArgEnv).
//  5. TOOLBOX_SESSION when Params.Session is set, and, for a tool whose
//     base was filtered (sandboxed or allowlisted), the caller's AGENT_*
//     variables.
//  6. For a run, AGENT_SESSION_ID, AGENT_CONVERSATION_ID and AGENT_TURN_ID
//     when the steps above left them unset, as agents-exe always sets them:
//     the session is TOOLBOX_SESSION (else a fresh id), the conversation
//     the session, the turn a fresh id per call.
//
// The result is sorted, so the same call gives the same environment (but
// for a generated AGENT_* id).
//
// # What it deliberately does not do
//
//   - Start anything, or check the binary (its hash and platform are the
//     launcher's check): see sandbox.Start.
//   - Decide whether a mechanism can honour a declaration: the compiler
//     refused such tools at lock time and the sandbox package refuses again
//     at start.
//   - Make the rundir writable inside a sandbox: a sandboxed tool with a
//     rundir must declare it (or a directory above it) in
//     runtime.sandbox.fs.write itself; Prepare never widens the declared
//     paths, and gives the rundir to run_as only inside a writable path.
//   - Decide what a run trusts: the caller passes a Trust (NewTrust) with
//     the lock's protected paths, the state dir to hide and the pinned
//     bubblewrap; a sandboxed tool is never prepared without one.
package runspec
