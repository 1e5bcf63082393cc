// Package sdk is what a Go tool author imports to ship a tool as a toolbox
// plugin: implement Tool (and Service for a long-running service), then call
// Serve from main.
//
//	func main() { sdk.Serve(myTool{}) }
//
// The SDK speaks the gRPC contract of its package proto (toolbox.proto and
// the go-plugin handshake), which the toolbox host imports too. It decodes and
// validates every call's arguments against the tool's own describe document
// (protocol.DecodeArgs and protocol.ValidateArgs, the rules the launcher
// applies to exec tools), so Run only ever sees declared, well-typed values;
// a call that fails them is refused before Run is called. A panic in Run or
// Serve is recovered and becomes exit code 2 with the panic value as the
// error text, a panic in Check a failed check; the stack goes to stderr.
//
// Output goes through the Emitter given to Run, never to os.Stdout: before
// the handshake stdout belongs to go-plugin (anything printed there makes
// the host refuse the plugin), and after it os.Stdout is a pipe whose
// content the host discards. Logs go to stderr through Logger(), which the
// host keeps for its error messages.
//
// Deliberately not here: validating output events against the declared
// schema (the host does it, for plugins and exec tools alike), and a way to
// run the binary as a bash-protocol tool: a plugin binary is started only
// by a host.
//
// The SDK is a Go module of its own, github.com/toolbox-dev/toolbox/plugins/sdk,
// so that a plugin's build pulls go-plugin, gRPC, protobuf and the protocol
// module (the describe document's types and the argument rules), never the
// toolbox's HCL compiler, JSON Schema validator or MCP server. Its versions
// are tagged plugins/sdk/vX.Y.Z; a plugin built with any SDK whose
// proto.ProtocolVersion matches the host's works with that host.
package sdk
