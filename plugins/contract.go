package plugins

import (
	"github.com/hashicorp/go-plugin"

	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
)

// The contract is defined once, in the SDK module's proto package, which
// plugins and this host both import (DESIGN.md §1); these names are the
// host's view of it.

// ProtocolVersion is the version of the toolbox plugin contract
// (pb.ProtocolVersion). A host and a plugin must agree on it exactly.
const ProtocolVersion = pb.ProtocolVersion

// PluginName is the name under which a plugin serves its Tool service in
// go-plugin's plugin set (pb.PluginName).
const PluginName = pb.PluginName

// Handshake is the go-plugin handshake shared by toolbox and its plugins
// (pb.Handshake).
var Handshake = pb.Handshake

// AllowedProtocols lists the transports a host accepts: gRPC only, so that
// a net/rpc plugin is refused at the handshake with a clear reason.
var AllowedProtocols = []plugin.Protocol{plugin.ProtocolGRPC}

// GRPCPlugin is the go-plugin glue of the Tool service (pb.GRPCPlugin).
type GRPCPlugin = pb.GRPCPlugin

// PluginSet is the go-plugin plugin set that serves impl (nil on the host
// side) under PluginName.
func PluginSet(impl pb.ToolServer) plugin.PluginSet { return pb.PluginSet(impl) }
