// Package daemon is `toolbox serve` (DESIGN.md §5, §7): one
// supervisor.Supervisor, owned by a long-lived process, served on a unix
// socket in the state dir to the CLI's process commands (start, send,
// processes, inbox). The protocol, its types and the client are in
// package wire, which the fast toolbox binary links.
//
// # The socket and who may use it
//
// Listen claims the state dir (mode 0700, owned by the daemon's user; a
// directory anyone else may enter is refused) with an exclusive flock on
// serve.pid, which holds the daemon's pid: a second daemon on the same
// state dir is refused (ErrRunning), and a daemon killed with SIGKILL
// leaves a lock the next one takes over. A serve.sock left behind by a
// dead daemon is removed; one that still answers is refused. The socket is
// bound under a temporary name, made 0600, then renamed to serve.sock, so
// the socket a client finds is always listening. Each connection's peer
// is checked with SO_PEERCRED: only the daemon's own uid is answered (root
// included: the socket is its owner's only).
//
// # Requests
//
// One request per connection (see wire). Requests run concurrently; the
// supervisor orders what needs ordering (two stops of one process both get
// its final status). A request's context ends when its client hangs up,
// which cancels a start in progress (the process is killed) or a wait.
// The lock is re-read when its file changes, before each start and
// run_command, so `toolbox lock` takes effect without a restart; a lock
// that cannot be read leaves the previous one in use.
//
// # What it deliberately does not do
//
//   - Own the supervisor's lifecycle: the serve command creates it and
//     closes it (stopping every process with its declared cancel) when
//     Serve returns.
//   - Speak MCP or HTTP, or listen on TCP.
//   - Keep anything across a restart beyond what the supervisor records
//     (process records, marked lost by the next supervisor).
package daemon
