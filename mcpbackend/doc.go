// Package mcpbackend is the client side of MCP servers used as tool
// backends (issue 14, DESIGN.md §3, §4): it starts a server under its
// sandbox (package sandbox, as tools are started), initializes a session
// with the official Go SDK, lists the server's tools as they came over the
// wire, pins them (each tool's canonical wire object and its sha256,
// manifest.CanonicalJSON) and tells a listing that differs from the lock,
// tool by tool and field by field (Pin.Diff, DriftError). Both sides use
// it: the compiler to lock a server, the launcher (through
// launcher/mcprun) to verify the server before every call and to call it.
//
// A session offers the server nothing: no roots, no sampling, no
// elicitation (the client declares no capabilities), so a server can
// neither reach the model nor be told about the operator's directories.
// The listing is read from the raw JSON-RPC result of tools/list, not from
// the SDK's decoded tools, so that every field the server sent is pinned,
// numbers as it wrote them, and a tool the SDK would drop is still seen.
// The protocol version offered is the last one without list caching
// (ProtocolVersion): a cached listing could hide a changed one.
//
// What it deliberately does not do: choose how a server runs (the spec,
// command and environment come from runspec), keep servers warm or
// restart them (launcher/mcprun), or serve what it lists to a model (the
// model only ever sees the locked definitions). A server reached over
// streamable HTTP (Dial) is verified the same way; nothing of it runs
// here.
package mcpbackend
