package plugins

import "errors"

// Errors of Start, usable with errors.Is. Each comes wrapped in a message
// that names the plugin and the reason (what it printed, how it exited).
var (
	// ErrNotPlugin: the executable exited, or printed something other than
	// a handshake, without ever completing the go-plugin handshake. A plugin
	// of another go-plugin program (another magic cookie) ends up here too.
	ErrNotPlugin = errors.New("not a toolbox plugin")
	// ErrProtocolVersion: the handshake names another contract version, go-plugin
	// core version or transport (only gRPC is accepted).
	ErrProtocolVersion = errors.New("unsupported plugin protocol")
	// ErrHandshakeAddress: the handshake names an address other than a unix
	// socket in the directory toolbox made for the plugin (a TCP address,
	// another socket on the host). toolbox dials what the handshake names,
	// outside the plugin's sandbox, so it dials nothing else.
	ErrHandshakeAddress = errors.New("plugin handshake names an address outside its socket directory")
	// ErrStdoutBeforeHandshake: the plugin wrote to stdout before its
	// handshake line; the handshake must be the first thing on stdout.
	ErrStdoutBeforeHandshake = errors.New("plugin wrote to stdout before the handshake")
	// ErrStartTimeout: no handshake within the start timeout.
	ErrStartTimeout = errors.New("plugin start timed out")
)

// Errors of calls on a started Client, usable with errors.Is.
var (
	// ErrInvalidDescribe: the plugin's describe document fails
	// validate.ParseDescribe (the same rules as an executable's).
	ErrInvalidDescribe = errors.New("invalid describe document")
	// ErrPluginExited: the plugin process ended while a call was in flight
	// (it crashed, panicked or exited); the message carries how it exited
	// and the tail of its stderr.
	ErrPluginExited = errors.New("plugin exited")
	// ErrNoExit: a Run or Session stream ended without its final Exit
	// message while the plugin kept running (a contract violation).
	ErrNoExit = errors.New("plugin ended the call without an exit status")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("plugin client closed")
)
