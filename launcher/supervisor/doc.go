// Package supervisor owns the processes that outlive one call (DESIGN.md
// §5, issue 5): service and stream tools of the lock, started by handle,
// and background shell commands (builtin "process"). It is the library
// under `toolbox serve`, the process commands of the CLI and the MCP
// server; it writes nothing to stdout and every result type is JSON-tagged
// for --json output and MCP structured content.
//
// # Sessions and processes
//
// A session is a string id chosen by the front-end (a CLI session, an MCP
// connection). It owns its processes and a mailbox, and is created on
// first use. A process has a short opaque id ("p" and six hex digits); a
// background command may also be addressed by its name. Every process runs
// in its own process group (sandbox.Start), and its states are those of
// DESIGN.md §5 (see State). Limits: Limits.LivePerSession (8) and
// LivePerHost (32) live processes; a start over either is refused with a
// *LimitError naming it, and nothing running is stopped to make room. The
// per-host count is shared by every supervisor of one slots directory (a
// flock'ed slot file per live process, slots.go): the daemon and every
// `toolbox mcp` of a state dir hold 32 together. FinishedPerSession (100)
// finished records are kept per session, the oldest finished dropped
// first.
//
// # Lifecycle decisions
//
//   - Ready: see Supervisor.Start. Lines before the ready line are startup
//     output, kept in the ring but not delivered as events.
//   - Stop: the declared cancel, then SIGKILL after runtime.timeout.stop
//     (default 5 s); a background command's cancel is SIGINT
//     (CommandCancel, the bash-daemon seed's kill); force kills at once;
//     idempotent.
//   - Completion surfaces once: a final state returned by an inline wait
//     (RunCommand's, Status with a wait, Wait) is not mailed as well
//     (inline.go); every other completion is mailed once.
//   - runtime.timeout.idle: when a running process writes nothing (stdout
//     or stderr) for that long it is stopped like Stop does and ends
//     timed_out, never restarted.
//   - runtime.on_exit: "report" (default): exit 0 is exited, anything
//     else failed. "restart": any exit that no stop asked for (code 0
//     included) restarts the tool after a backoff (Timing.RestartBackoff,
//     doubled each time up to RestartMaxBackoff), state restarting with
//     Status.Restarts counting; after Limits.RestartLimit restarts it ends
//     failed; a run that lasted Timing.RestartReset starts the count over.
//     The binary is verified against the lock again before each restart.
//     "fail": any exit that no stop asked for is failed, code 0 included
//     (a service is not supposed to exit). A first start that never
//     becomes ready is failed and never restarted.
//
// # Output
//
// Each process has a Ring (1 MiB, stdout and stderr labelled, absolute
// byte cursors, pages of at most 64 KiB that never split a UTF-8
// character). Status shows the last TailBytes (4 KiB) of stdout and of
// stderr apart (Status.Stdout, Status.Stderr). With Config.LogBytes the
// full output also goes to two log files per process under the state dir,
// each capped.
//
// # Events and mail
//
// A service's stdout is framed as the tool declares (jsonl validated
// against output.event with Config.CompileSchema, lines, chunks); events
// answer Send and are mailed to the session as digests, per
// process.digest: "round" (the default; a burst ending at a quiet gap of
// Timing.RoundGap, cut every Timing.RoundMax when it never pauses),
// "events" n (every n events, a partial group RoundMax after its first
// event) or "seconds" n (each n-second window with events). A Send's
// answer holds only events the service produced after the send: its
// stdout pipe is the supervisor's own, so the send knows the stdout
// position it was written at (stdout_pipe.go). A mail keeps the digest's first Limits.MailEvents events (and
// Limits.MailBytes) and counts the rest in Mail.Elided; under a flood
// the events nobody keeps are counted without being validated.
// Completions (and restarts) are mailed too. Inbox reads mail with a cursor and never consumes it; Subscribe
// gives a channel for push notifications. Mailboxes live in memory only.
// Stream tools started with Start are not mailed event by event: their
// events are kept (the last Limits.MailEvents), Status shows the newest
// instead of a stdout tail, and their completion mail carries the last
// ones (stream_events.go). RunStream runs one to completion for MCP.
//
// # Persistence
//
// With a state dir, every process has a record file rewritten atomically
// on each state change (Record). A supervisor that starts and finds
// records of a dead supervisor (its pid gone, or reused by a process that
// started at another time) marks their unfinished processes lost and
// mails their sessions; it never signals or restarts them.
//
// # What it deliberately does not do
//
//   - Run oneshot tools (launcher.Run does) or go-plugin tools.
//   - Sandbox background commands: they run as the supervisor's user with
//     the caller's environment, an operator opt-in (builtin "process").
//   - Catch descendants that leave their process group under mechanism
//     "none": stop signals the group only. A sandboxed tool is covered
//     (bwrap's pid namespace, the landlock helper's subreaper).
//   - Serve a socket, parse flags or speak MCP: the front-ends do.
//   - Keep mail or output across a supervisor restart (records only).
//   - Bound the memory of finished records other than by their count:
//     a finished process keeps its ring (up to RingBytes) until dropped.
package supervisor
