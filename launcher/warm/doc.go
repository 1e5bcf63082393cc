// Package warm keeps long-lived tool processes for the servers (`toolbox
// mcp`, `toolbox serve`; DESIGN.md §5 "Warm processes", issue 13): one
// process per owner and tool, started on the first call, serving every
// later call of that owner, restarted with back-off when it dies, and
// stopped when its owner ends. An owner is a session (an MCP connection):
// processes are never shared between owners, so no state a process keeps
// in memory crosses from one session to another.
//
// The package knows nothing of plugins, gRPC or sandboxes: a process is an
// Instance (something that ends, and can be closed), started by the Start
// function of a Spec. Package launcher/pluginrun keeps go-plugin clients
// in it; a backend of another kind (an MCP server) can keep its own.
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
//   - Owner.Close closes every process of the owner, whatever it is doing,
//     and waits until each has ended; later Acquires get ErrClosed.
//     Pool.Close closes every owner.
//
// What it deliberately does not do: verify binaries (Spec.Start does it
// before it starts a process), retry a call that failed (a call is not
// known to be idempotent), or bound how many owners a pool has (the
// servers bound sessions).
package warm
