package compiler

import (
	"context"
	"fmt"

	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// describePlugin starts a plugin under spec with environment env
// (describeEnv), asks for its describe
// document (validated by the plugins package with the same rules as an
// executable's) and stops it. It returns the negotiated plugin protocol.
// A binary that is not a plugin, speaks another protocol version, prints
// before its handshake or hangs is an error saying which.
func (p *prober) describePlugin(ctx context.Context, t *ToolDecl, exe *sandbox.Executable, spec *sandbox.Spec, env []string) (*protocol.Describe, int, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.DescribeTimeout)
	defer cancel()
	c, err := plugins.Options{StartTimeout: p.opts.DescribeTimeout, Exe: exe}.Start(ctx, t.Path, spec, env)
	if err != nil {
		return nil, 0, fmt.Errorf("starting the plugin: %w", err)
	}
	defer c.Close()
	d, _, err := c.Describe(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("plugin describe: %w", err)
	}
	return d, c.ProtocolVersion(), nil
}
