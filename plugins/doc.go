// Package plugins makes Go plugins a first-class kind of toolbox tool, beside
// executables that speak the bash-tool protocol (DESIGN.md §2).
//
// A plugin is an executable served by hashicorp/go-plugin over gRPC. It
// answers the same three questions as an executable tool (describe, check,
// run), and its describe document is the same JSON, so that everything
// downstream of this package (lock, launcher, MCP) follows one code path.
//
// The package holds three things:
//
//   - the contract: Handshake, PluginName and GRPCPlugin, over the service
//     generated from toolbox.proto, both defined in the SDK module's
//     package plugins/sdk/proto (which plugins import too) and named here;
//   - the host side, Client, used by the compiler (probe: Start, Describe,
//     Check, Close) and by the launcher (Start, Run or Session, Close);
//   - under sdk/, the package tool authors import (a Go module of its own),
//     and under examples/ (another), real plugins built on it: read_file (the twin of the default toolbox's
//     exec tool, same args, so that both can back one capability) and walk
//     (a stream of one JSON event per file). They declare their runtime
//     relative to toolboxes/default/plugins/, where they are meant to be
//     built: go build -o toolboxes/default/plugins/ ./plugins/examples/...
//
// How a start fails is told apart precisely, because the compiler reports
// it to an operator: the runner reads the plugin's stdout itself and hands
// go-plugin the handshake line only when it is the first thing printed
// (ErrNotPlugin, ErrStdoutBeforeHandshake, ErrProtocolVersion,
// ErrStartTimeout). The go-plugin settings NOTES.md lists are all set
// explicitly in Options.Start.
//
// Deliberately not here: verifying the binary against the lock (the caller
// hashes the file it is about to start; go-plugin's SecureConfig hashes the
// wrong file, see NOTES.md), choosing or building a sandbox (the caller passes
// a sandbox.Spec), framing and validating output events against the declared
// schema (the launcher does it for both kinds of tool), and supervising
// services over time (the launcher's process supervisor).
//
// Every started plugin is the leader of its own process group, and Close and
// Kill take the whole group down, not only the direct child. Clients are
// registered with go-plugin as managed: a program that starts plugins must
// defer plugin.CleanupClients() (github.com/hashicorp/go-plugin) inside its
// realMain, so that an early return never leaves a plugin behind.
package plugins
