package proto

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the version of the toolbox plugin contract (the Tool
// service of toolbox.proto). A host and a plugin must agree on it exactly;
// it changes only when the service changes incompatibly, and the module
// holding this package then takes a new major version.
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

// GRPCPlugin is the go-plugin glue of the Tool service. On the plugin side
// (sdk.Serve) Impl is the service to register; on the host side Impl is
// unused and GRPCClient returns a ToolClient.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the server implementation; required to serve, ignored by hosts.
	Impl ToolServer
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// errNoImpl is returned by GRPCServer when a plugin is served without Impl.
var errNoImpl = errors.New("proto.GRPCPlugin served without Impl")

// GRPCServer registers Impl on s. It fails when Impl is nil.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errNoImpl
	}
	RegisterToolServer(s, p.Impl)
	return nil
}

// GRPCClient returns a ToolClient over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return NewToolClient(conn), nil
}

// PluginSet is the go-plugin plugin set that serves impl (nil on the host
// side) under PluginName.
func PluginSet(impl ToolServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}
