// Package manifest is the lock file, toolbox.lock.json (DESIGN.md §4): its
// types, a strict reader, a canonical atomic writer and a diff that says
// what changed between two locks.
//
// The lock is the only contract between the compiler, which writes it, and
// the launcher, which trusts nothing else. Two properties follow:
//
//   - Canonical: Marshal sorts keys at every level, indents by two spaces,
//     ends with a newline and escapes no HTML, and the lock holds no
//     timestamps or timings. Two locks of the same inputs are
//     byte-identical, so `toolbox lock --check` can compare bytes and use
//     Diff only to explain a difference.
//   - Strict: Unmarshal refuses unknown keys, another format version, and a
//     lock whose parts do not agree (a capability naming a tool that is not
//     locked, an unknown status, a malformed hash). It reports every such
//     problem at once, in a deterministic order.
//
// Marshal validates with the same rules, so a lock this package writes is
// always one it reads back.
//
// A multi-command binary is written once and each of its commands with
// its tool (binaries.go), so a lock is linear in its tools; ReadCall reads
// only the part of a lock one call needs.
//
// What it deliberately does not do:
//
//   - Validate the describe documents against their JSON Schemas: the
//     compiler did that before locking, and the launcher must start fast
//     (no schema compiled on a run). A describe document is decoded into
//     protocol.Describe, whose unknown keys are refused like any other.
//   - Verify the lock against the world (toolbox file hash, binary hashes,
//     platform): that is the launcher's check before a run; this package
//     only supplies HashFile and Platform for it.
//   - Detect keys that differ from the canonical ones only by letter case,
//     or duplicated keys: encoding/json accepts both (case-insensitive
//     match, last duplicate wins). A lock written by Write never has them,
//     and any hand edit makes `toolbox lock --check` report drift.
package manifest
