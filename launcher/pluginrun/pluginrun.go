// Package pluginrun runs plugin tools for the launcher: it implements
// launcher.PluginRunner with the go-plugin host of package plugins. It is a
// package of its own so that the launcher does not link gRPC: only the
// binaries that run plugins (toolbox-core, the servers) import it.
package pluginrun

import (
	"context"
	"fmt"
	"io"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/plugins"
)

// Runner is the launcher.PluginRunner of the go-plugin host. The zero value
// uses plugins' defaults (start timeout, socket directory).
type Runner struct {
	// Options tune how plugins are started.
	Options plugins.Options
}

var _ launcher.PluginRunner = Runner{}

// RunPlugin starts the plugin under call.Spec with call.Env, runs one call
// and closes the plugin (its whole process group). Output chunks go to
// call.Stdout as they are and events one JSON line each; the plugin's
// stderr goes to call.Stderr when the plugin has stopped. When ctx ends the
// plugin is killed at once.
func (r Runner) RunPlugin(ctx context.Context, call launcher.PluginCall) (int, bool, error) {
	opts := r.Options
	if opts.Dir == "" {
		opts.Dir = call.Dir
	}
	opts.Exe = call.Exe
	c, err := opts.Start(ctx, call.Path, call.Spec, call.Env)
	if err != nil {
		return 0, false, err
	}
	stop := context.AfterFunc(ctx, c.Kill)
	defer stop()
	defer func() {
		_ = c.Close()
		if call.Stderr != nil {
			_, _ = io.WriteString(call.Stderr, c.Stderr())
		}
	}()
	var werr error
	res, err := c.RunCommand(ctx, call.Command, call.Args, func(o plugins.Output) {
		if werr != nil || call.Stdout == nil {
			return
		}
		_, werr = call.Stdout.Write(o.Data)
		if werr == nil && o.Kind == plugins.Event {
			_, werr = call.Stdout.Write([]byte("\n"))
		}
	})
	if ctx.Err() != nil {
		return 0, true, ctx.Err()
	}
	if err != nil {
		return 0, true, fmt.Errorf("running plugin %s: %w", call.Path, err)
	}
	if werr != nil {
		return res.ExitCode, true, werr
	}
	if res.Error != "" && res.ExitCode == 0 {
		return 1, true, fmt.Errorf("plugin %s: %s", call.Path, res.Error)
	}
	if res.Error != "" && call.Stderr != nil {
		_, _ = fmt.Fprintln(call.Stderr, res.Error)
	}
	return res.ExitCode, true, nil
}
