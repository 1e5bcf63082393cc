// Package wire is the protocol of `toolbox serve` (DESIGN.md §5, §7): the
// request and response types, the error codes, where the socket lives, and
// a Client. It is what the CLI's process commands link, so it stays cheap:
// it imports the supervisor for its JSON result types only, and never the
// JSON Schema library, the HCL parser, gRPC or go-plugin (the toolbox
// binary's start time depends on it; cmd/toolbox's TestFastBinaryDeps
// checks it).
//
// # The protocol
//
// The daemon listens on a unix socket, <state dir>/serve.sock (mode 0600,
// in a 0700 directory), and answers only peers of its own uid
// (SO_PEERCRED). A client connects, writes one Request as one line of JSON
// (at most MaxRequestBytes), and reads one Response line; then the
// connection is closed. The daemon takes the end of its read side as the
// client hanging up: a client that closes its connection, or only its
// write side, before the answer cancels its request (a start in progress
// is killed, a wait ends). Keep the connection open until the answer.
//
//	→ {"op":"status","session":"default","process":"p1a2b3c","wait_ms":5000}
//	← {"ok":true,"result":{"process":"p1a2b3c","tool":"watch_log",...}}
//	← {"ok":false,"error":{"code":"unknown_process","message":"..."}}
//
// Request documents, per op, the fields it reads and the result type
// (the supervisor's JSON types, unchanged). Errors carry a stable Code
// (the Code* constants) and a message that says the fix.
//
// # What it deliberately does not do
//
//   - Keep connections open or multiplex requests: one request per
//     connection keeps the daemon stateless towards its clients.
//   - Authenticate beyond the peer's uid: the socket is its owner's only.
//   - Stream events: mail is read with cursors (op inbox).
package wire
