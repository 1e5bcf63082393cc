package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// DefaultSession is the session of the process commands when neither
// --session nor $TOOLBOX_SESSION names one.
const DefaultSession = "default"

// Caller sends one request to the daemon and decodes its result into out
// (wire.Client; tests pass a fake).
type Caller interface {
	Call(ctx context.Context, req wire.Request, out any) error
}

// DaemonOptions are the inputs every command that talks to `toolbox
// serve` shares: start, send, processes and inbox.
type DaemonOptions struct {
	*Globals
	// Session is --session; "" means $TOOLBOX_SESSION, else
	// DefaultSession.
	Session string
	// JSON prints the daemon's answer as JSON (the supervisor's types) and
	// errors as {"error": {"code", "message", "process"}} on stdout.
	JSON bool
	// Dial returns the daemon's client; nil means a wire.Client of the
	// state dir (--state-dir, else wire.DefaultStateDir).
	Dial func() (Caller, error)
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// addDaemonFlags adds --session and --json.
func addDaemonFlags(cmd *cobra.Command, o *DaemonOptions) {
	cmd.Flags().StringVar(&o.Session, "session", "", "the session the processes belong to (default $TOOLBOX_SESSION, else \"default\")")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the daemon's answer as JSON")
}

func (o *DaemonOptions) getenv(k string) string {
	if o.Getenv != nil {
		return o.Getenv(k)
	}
	return os.Getenv(k)
}

// SessionID is --session, else $TOOLBOX_SESSION, else DefaultSession.
func (o *DaemonOptions) SessionID() string {
	switch {
	case o.Session != "":
		return o.Session
	case o.getenv("TOOLBOX_SESSION") != "":
		return o.getenv("TOOLBOX_SESSION")
	}
	return DefaultSession
}

// wantLock is the absolute lock path the caller means when it named a
// toolbox file (-f or $TOOLBOX_FILE), else "" (any lock the daemon
// serves will do).
func (o *DaemonOptions) wantLock() string {
	if o.File == "" && o.getenv("TOOLBOX_FILE") == "" {
		return ""
	}
	p := manifest.LockPath(o.ToolboxFile())
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// call sends req (its session filled in) and decodes the answer into out.
// Errors come back ready to print: with the fix when no daemon runs, and,
// under --json, already written to stdout (the returned error then only
// carries the exit code).
func (o *DaemonOptions) call(ctx context.Context, req wire.Request, out any) error {
	if ctx == nil {
		ctx = context.Background()
	}
	req.Session = o.SessionID()
	dial := o.Dial
	if dial == nil {
		dial = o.defaultDial
	}
	c, err := dial()
	if err == nil {
		err = c.Call(ctx, req, out)
	}
	if err == nil {
		return nil
	}
	return o.failed(err)
}

func (o *DaemonOptions) defaultDial() (Caller, error) {
	dir, err := wire.StateDir(o.StateDir)
	if err != nil {
		return nil, err
	}
	return wire.NewClient(dir), nil
}

// failed reports err: as JSON on stdout under --json, else as the error
// Execute prints, with the fix for a daemon that is not running.
func (o *DaemonOptions) failed(err error) error {
	if errors.As(err, new(*UsageError)) {
		return err
	}
	var nd *wire.NoDaemonError
	if errors.As(err, &nd) {
		err = &wire.Error{Code: wire.CodeNoDaemon, Message: fmt.Sprintf(
			"%v; start it with `toolbox serve -f FILE &` (with the same --state-dir), or with `systemd-run --user --unit toolbox toolbox serve -f /abs/path/toolbox.hcl`", nd)}
	}
	e := wire.ErrorOf(err)
	if o.JSON {
		if werr := WriteJSON(o.IO.Out, struct {
			Error *wire.Error `json:"error"`
		}{e}); werr != nil {
			return werr
		}
		return WithCode(ExitError, nil)
	}
	if e.Code == wire.CodeNotReady && e.Process != "" {
		return fmt.Errorf("%s; its output: toolbox processes output %s", e.Message, e.Process)
	}
	return err
}
