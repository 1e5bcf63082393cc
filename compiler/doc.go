// Package compiler turns a toolbox file (HCL) into a lock.
//
// It loads and validates the toolbox file (Load), probes every tool under
// its real runtime in parallel (describe, then check when declared),
// resolves each capability's active backend, and builds the manifest.Lock
// that the launcher trusts (Compile). It never runs a tool's `run` verb and
// never imports the launcher: the lock is the only contract between them.
//
// Errors are located: a problem in the toolbox file reads
// `file:line:col: block: message; fix`, a problem found by probing names the
// tool and says what to do.
package compiler
