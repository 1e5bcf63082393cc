// Package pluginrun runs plugin tools for the launcher: it implements
// launcher.PluginRunner with the go-plugin host of package plugins. It is a
// package of its own so that the launcher does not link gRPC: only the
// binaries that run plugins (toolbox-core, the servers) import it.
//
// Runner starts a plugin for each call and stops it after (`toolbox run`,
// cold). Warm keeps one process per session and tool in a pool and serves
// every call of the session with it (`toolbox mcp`, `serve`; DESIGN.md §5).
package pluginrun

import (
	"context"
	"fmt"
	"io"
	"time"

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
	code, _, err := runCall(ctx, c, call)
	return code, true, err
}

// runCall makes one call of a started plugin and turns its outcome into an
// exit code: output to call.Stdout (events one JSON line each), the tool's
// error message to call.Stderr. The error is ctx's when it ended, why the
// call failed, or why writing the output failed. broken says the process
// may not serve another call: ctx ended (the plugin may still be busy with
// this one) or the call itself failed (the plugin died, broke the
// protocol).
func runCall(ctx context.Context, c *plugins.Client, call launcher.PluginCall) (code int, broken bool, err error) {
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
	if ended(ctx) {
		return 0, true, ctx.Err()
	}
	if err != nil {
		return 0, true, fmt.Errorf("running plugin %s: %w", call.Path, err)
	}
	if werr != nil {
		return res.ExitCode, false, werr
	}
	if res.Error != "" && res.ExitCode == 0 {
		return 1, false, fmt.Errorf("plugin %s: %s", call.Path, res.Error)
	}
	if res.Error != "" && call.Stderr != nil {
		_, _ = fmt.Fprintln(call.Stderr, res.Error)
	}
	return res.ExitCode, false, nil
}

// deadlineSlack is how close to its deadline a call that ended counts as
// timed out: gRPC carries the deadline to the plugin, whose side may end
// the call (an error, an exit status) a moment before ctx itself is done.
const deadlineSlack = 20 * time.Millisecond

// ended reports whether ctx ended with the call, waiting for it when the
// call ended within deadlineSlack of ctx's deadline.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < deadlineSlack {
		<-ctx.Done() // within deadlineSlack
		return true
	}
	return false
}
