// Package warm keeps long-lived tool processes for the servers (`toolbox
// mcp`, `toolbox serve`; DESIGN.md §5 "Warm processes", issue 13): one
// process per owner and tool, started on the first call, serving every
// later call of that owner, restarted with back-off when it dies, and
// stopped when its owner ends. An owner is a session (an MCP connection):
// processes are never shared between owners, so no state a process keeps
// in memory crosses from one session to another.
//
// The package knows nothing of plugins, gRPC, MCP or sandboxes: a process
// is an Instance (something that ends, and can be closed), started by the
// Start function of a Spec. It is the one pool of warm processes:
// launcher/pluginrun keeps go-plugin clients in it, launcher/mcprun MCP
// server sessions (mcpbackend.Session), each in its own Pool.
//
// # Lifecycle
//
// Owner.Acquire returns a Lease on the owner's process for a tool, starting
// it when there is none. A process serves at most Spec.Limit leases at once;
// later Acquires wait for a slot (bounded by their context). Starts run in
// the background under the owner's context: a caller that gives up waiting
// does not abort a start that later callers will use.
//
//   - A process that ends by itself (crash, exit, killed) is a failure: it is
//     started again after a back-off that doubles with each consecutive
//     failure, from Options.MinBackoff up to Options.MaxBackoff. A process
//     that ran Options.StableAfter before ending resets the count. Calls
//     that arrive meanwhile wait for the restart.
//   - A start that fails after a process was started (a failed handshake)
//     is a failure too; Acquires during its back-off get its error at once
//     instead of waiting. A start refused before any process existed (the
//     binary no longer matches the lock: wrap the error with Unstarted)
//     does not count, so every call gets the refusal at once.
//   - Lease.Retire takes a process out of service (its call timed out or was
//     cancelled, so it may still be busy): no new lease goes to it, it is
//     closed once its other leases end, and the next Acquire starts a new
//     one without back-off. An Acquire whose Spec.Config differs from the
//     running process's retires it the same way (the lock changed).
//   - Lease.Fail takes a broken process (its connection gone) out of
//     service at once and counts a failure; Lease.Served records that the
//     process served a call, which starts the failure count over.
//   - Owner.Refuse refuses a tool for the rest of the owner's life (an MCP
//     server whose tools changed): its process is closed and every later
//     Acquire gets the refusal; a restart would only hide the change.
//   - Owner.Close closes every process of the owner, whatever it is doing,
//     and waits until each has ended; later Acquires get ErrClosed.
//     Pool.Close closes every owner.
//
// # On demand
//
// A pool with Options.OnDemand restarts nothing in the background: a
// process that ended by itself is found by the next Acquire (Spec.Ended
// is told), which starts a new one when the back-off allows, and an
// Acquire during a back-off fails at once with a *BackoffError (how many
// failures, the last one, the wait) instead of waiting. Options.Backoff
// replaces the back-off's schedule and a negative Options.StableAfter
// leaves the reset of the count to Lease.Served: launcher/mcprun restarts
// MCP servers this way (the first restart at once, then 1 s doubling to
// 30 s, reset by a call that succeeds).
//
// What it deliberately does not do: verify binaries (Spec.Start does it
// before it starts a process), retry a call that failed (a call is not
// known to be idempotent), or bound how many owners a pool has (the
// servers bound sessions).
package warm
