// Package pluginprobe is the probe.PluginCheck of go-plugin tools: it
// starts a plugin under its runtime, calls Check over gRPC and stops it.
// It is apart from package probe so that probe does not link gRPC.
package pluginprobe

import (
	"context"
	"fmt"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/probe"
	"github.com/toolbox-dev/toolbox/sandbox"
)

var _ probe.PluginCheck = Check

// Check starts a plugin under its real runtime (spec and the
// environment runspec prepared), calls Check and stops it. It is the
// probe.PluginCheck of the go-plugin host.
func Check(ctx context.Context, cmd sandbox.Command, spec *sandbox.Spec, timeout time.Duration) manifest.Probe {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := plugins.Options{StartTimeout: timeout, Dir: cmd.Dir, Exe: cmd.Exe}.Start(ctx, cmd.Path, spec, cmd.Env)
	if err != nil {
		return manifest.Probe{Status: manifest.StatusFailed, Detail: fmt.Sprintf("starting the plugin for check: %v", err)}
	}
	defer c.Close()
	res, err := c.Check(ctx)
	switch {
	case err != nil:
		return manifest.Probe{Status: manifest.StatusFailed, Detail: fmt.Sprintf("plugin check: %v", err)}
	case !res.OK:
		detail := res.Detail
		if detail == "" {
			detail = "check reported not ok"
		}
		return manifest.Probe{Status: manifest.StatusFailed, Detail: detail, Fix: res.Fix}
	}
	return manifest.Probe{Status: manifest.StatusOK, Detail: res.Detail}
}
