package plugins

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/toolbox-dev/toolbox/plugins/proto"
)

// ProtocolVersion is the version of the toolbox plugin contract (the Tool
// service of proto/toolbox.proto). A host and a plugin must agree on it
// exactly; it changes only when the service changes incompatibly.
const ProtocolVersion = 1

// PluginName is the name under which a plugin serves its Tool service in
// go-plugin's plugin set.
const PluginName = "tool"

// Handshake is the go-plugin handshake shared by toolbox and its plugins.
// The magic cookie is not a security measure: it lets a plugin started by
// hand say that it is a plugin, and tells a toolbox plugin apart from the
// plugins of other programs built on go-plugin.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "TOOLBOX_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "8d3f1c2a-toolbox-plugin-v1-4b6e9a07",
}

// AllowedProtocols lists the transports a host accepts: gRPC only, so that
// a net/rpc plugin is refused at the handshake with a clear reason.
var AllowedProtocols = []plugin.Protocol{plugin.ProtocolGRPC}

// GRPCPlugin is the go-plugin glue of the Tool service. On the plugin side
// (Serve) Impl is the service to register; on the host side Impl is unused
// and GRPCClient returns a pb.ToolClient.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the server implementation; required to serve, ignored by hosts.
	Impl pb.ToolServer
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// errNoImpl is returned by GRPCServer when a plugin is served without Impl.
var errNoImpl = errors.New("plugins.GRPCPlugin served without Impl")

// GRPCServer registers Impl on s. It fails when Impl is nil.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errNoImpl
	}
	pb.RegisterToolServer(s, p.Impl)
	return nil
}

// GRPCClient returns a pb.ToolClient over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return pb.NewToolClient(conn), nil
}

// PluginSet is the go-plugin plugin set that serves impl (nil on the host
// side) under PluginName.
func PluginSet(impl pb.ToolServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}
