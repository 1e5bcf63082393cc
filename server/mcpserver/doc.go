// Package mcpserver exposes a locked toolbox to agents over the Model
// Context Protocol (DESIGN.md §7, issue 6), with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk). `toolbox mcp` serves it over
// stdio (ServeStdio); `toolbox serve` mounts its streamable HTTP Handler
// behind an HTTPGuard (bearer token, Origin, peer uid on unix sockets).
//
// # Tools
//
// The tool list is fixed when the server is built; package mcpnames says
// it without starting anything (mcpnames.ToolNames, for the compiler's
// collision check at lock time):
//
//   - one tool per catalog entry (package catalog): every capability,
//     served by its active backend (or a --backend override), and every
//     tool no capability hides, multi-command tools' commands included.
//     Names are mcpnames.MCPName of the lock's ("kv.get" → "kv_get"); input
//     schemas are the describe documents' (protocol.InputSchema),
//     registered as they are, never derived from Go types;
//   - "<name>_send" per service entry that declares process.input, unless
//     the operator left it out (send = false on the tool block, locked as
//     omit_send): args {process, event}, event typed with the declared
//     input.event schema verbatim (a lines input without a schema takes a
//     string; catalog.SendSchema);
//   - "processes" (action list | status | output | tail | stop) and
//     "inbox" (cursor, max), when the lock has a service or declares
//     builtin "process";
//   - "process_run", "process_status", "process_kill" (background shell
//     commands: command, name, label, cwd, env, timeout_seconds,
//     wait_seconds), only when the lock declares builtin "process".
//
// # Results
//
// A oneshot's text output is text content (capped at MaxTextBytes, saying
// so); binary output (not UTF-8) is an embedded resource with its media
// type (base64 on the wire); an AddMessage empty result is its message.
// jsonl results, stream results (the last StreamKeep events and the count
// left out), service handles (Started), process statuses and output pages
// (supervisor.Status, supervisor.Page), send answers and inbox pages are
// structured content, with their JSON as text content too. A capability's
// result names the backend that served it (in the structured content, or
// in a last text block). Every failure is a tool error (isError) with
// Failure as structured content: a non-zero exit or a timeout (exit code,
// stdout and stderr tail), a refusal before launch (stale lock: 125,
// missing binary: 127), bad arguments (125), a process operation that
// failed. Protocol errors are left to the SDK (unknown tool, malformed
// request).
//
// # Sessions and notifications
//
// Each MCP connection (*mcp.ServerSession) gets its own supervisor
// session ("mcp-" and 16 hex digits, also the tools' TOOLBOX_SESSION) on
// its first tool call; when the connection ends, its processes are
// stopped with their declared cancel and the session is forgotten.
// Long waits (a oneshot run, a service's start, an inline wait of status
// or process_run, a stop) send a progress notification every
// ProgressInterval when the client gave a progress token; a stream tool
// sends each event as one. Service events and process completions are the
// session's mail: each is sent as a logging notification (logger
// "toolbox", level info, warning for failed, timed_out and lost; data the
// mail's JSON), which the SDK delivers only after the client set a level
// (logging/setLevel), and a resources/updated notification for InboxURI
// goes to the clients that subscribed to it. Mail always stays readable
// with the inbox tool and the InboxURI resource. Over HTTP, the
// resources/updated nudge goes to every subscriber of InboxURI (it carries
// no content; each reader sees only its own session's mail).
//
// # What it deliberately does not do
//
//   - Read the lock or the toolbox file, or check the toolbox file's hash:
//     the command does (cmd/internal/corecmd). Each run verifies its
//     binary against the lock (launcher.Verify), exactly as `toolbox run`.
//   - Own the supervisor: the caller creates it and closes it after the
//     server is done.
//   - Run stream tools as processes: a stream call lasts until the tool
//     ends (the client cancels it to stop it early).
//   - Offer stateless HTTP: a service started by one request would be
//     stopped at its end.
package mcpserver
