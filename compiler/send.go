package compiler

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/toolbox-dev/toolbox/protocol"
)

// `send = false` on a tool block leaves the service's send companion
// (<name>_send, the v2 spec's T.send) out of what models see: list,
// schema and the MCP server's tool list (the spec's D6: "an agent
// configuration may omit it, saving its tokens", for a service the model
// may start but never talk to). It is locked as the tool's omit_send; the
// operator's own `toolbox send` still reaches the service.

// send reads the send attribute of a tool block. Only true (the default)
// and false are values; a plugin is never a service, so it takes none.
func (l *loader) send(t *ToolDecl, b *hcl.Block, a *hcl.Attribute, block string) bool {
	if a == nil {
		return true
	}
	if b.Type == "plugin" {
		l.add(at(a.Expr.Range(), block, "send is set on a plugin", "remove send: plugins are never services, so they have no send companion"))
		return false
	}
	v, ok := l.boolean(a, block)
	t.OmitSend, t.SendRange = ok && !v, a.Expr.Range()
	return ok
}

// checkSend refuses `send = false` on a tool that has no send companion
// to leave out: not a service, or one that reads no events.
func checkSend(t *ToolDecl, d *protocol.Describe) error {
	if !t.OmitSend || d.Mode() == protocol.ProcessService && d.Process.Input != nil {
		return nil
	}
	r := t.SendRange
	return &Diagnostic{
		File: r.Filename, Line: r.Start.Line, Col: r.Start.Column, Block: t.Block,
		Msg: fmt.Sprintf("send = false, but %q has no send companion to leave out (it is a %s tool without process.input)", t.Name, d.Mode()),
		Fix: "remove send: only a service that declares process.input has a <name>_send tool",
	}
}
