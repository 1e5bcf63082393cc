package launcher

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// PluginCall is one run of a plugin tool, prepared like an exec tool's:
// Path is the verified binary and Exe its checked descriptor (what must
// run: sandbox.Command.Exe), Spec/Env/Dir come from runspec, Command is
// the command of a multi-command tool ("" for none), Args the validated
// values. Stdout receives output chunks as they are and each event as one
// JSON line; Stderr the plugin's stderr.
type PluginCall struct {
	// Tool is the locked tool's name (a warm runner keeps one process per
	// session and tool).
	Tool    string
	Path    string
	Exe     *sandbox.Executable
	Spec    *sandbox.Spec
	Env     []string
	Dir     string
	Command string
	Args    map[string]any
	Stdout  io.Writer
	Stderr  io.Writer
	// Verify checks Path against the lock (VerifyBinary). Run has already
	// checked it for this call (Exe) unless the runner is a StartVerifier,
	// which must check it before it starts each process: with Open, which
	// opens the binary once and hashes it from that descriptor (OpenBinary),
	// the descriptor the process is then started from (Exe is nil then).
	Verify func() error
	Open   func() (*sandbox.Executable, error)
	// Concurrency is the locked bound on calls one process of the plugin
	// serves at once (runtime.concurrency of the lock; 0 means 1).
	Concurrency int
	// SHA256 is the binary's locked hash (what Verify checks it against).
	SHA256 string
}

// PluginRunner runs plugin tools. RunPlugin starts the plugin under
// call.Spec, runs the call and stops the plugin (its whole process group)
// before returning the exit code. When ctx ends it must stop the plugin
// at once and return ctx's error. started is false when the plugin never
// completed its start (handshake), in which case err says why.
type PluginRunner interface {
	RunPlugin(ctx context.Context, call PluginCall) (code int, started bool, err error)
}

// StartVerifier is a PluginRunner that verifies a plugin's binary each time
// it starts a process for it (PluginCall.Verify), and reuses the process
// for later calls (warm plugins, launcher/pluginrun.Warm). Run then leaves
// the binary's hash out of its per-call checks for that runner; the
// platform and the toolbox file are still checked at every call.
type StartVerifier interface {
	PluginRunner
	// VerifiesAtStart reports whether the runner calls PluginCall.Verify
	// before starting each process.
	VerifiesAtStart() bool
}

// verifiesAtStart reports whether pr is a StartVerifier that says so.
func verifiesAtStart(pr PluginRunner) bool {
	sv, ok := pr.(StartVerifier)
	return ok && sv.VerifiesAtStart()
}

// executePlugin runs one plugin call under the same call timeout and with
// the same output sinks as an exec tool.
func executePlugin(ctx context.Context, pr PluginRunner, call PluginCall, o execOptions) (*Result, error) {
	return collect(call.Path, o, func(stdout, stderr io.Writer) (outcome, error) {
		call.Stdout, call.Stderr = stdout, stderr
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		code, started, err := pr.RunPlugin(cctx, call)
		out := outcome{started: started, code: code, elapsed: time.Since(start)}
		if re := (*RefusedError)(nil); !started && errors.As(err, &re) {
			return out, re // refused before its start (the binary changed): its own fix
		}
		if !started {
			return out, &RefusedError{What: "starting plugin " + call.Path + ": " + errString(err), Fix: "run `toolbox check --probe` to see why the plugin does not start", Err: err}
		}
		if cerr := cctx.Err(); cerr != nil {
			if errors.Is(cerr, context.DeadlineExceeded) {
				out.timedOut, out.code = true, ExitTimeout
			} else {
				out.canceled = true
			}
			return out, nil
		}
		return out, err
	})
}

func errString(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
