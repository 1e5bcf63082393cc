package supervisor

import (
	"context"
	"fmt"

	"github.com/toolbox-dev/toolbox/protocol"
)

// Start starts a service or stream tool of the lock (name may be a
// capability: its active backend runs, launcher.Resolve) for the session
// and returns its handle once the tool is ready (DESIGN.md §5):
//
//   - process.ready kind "line": a stdout line matched the regexp; lines
//     up to the ready line are startup output (in the ring, not events);
//   - kind "exit": the process exited 0 (the handle is then exited);
//   - kind "immediate", or none declared: as soon as it started.
//
// The wait is bounded by runtime.timeout.start (Timing.StartTimeout when
// undeclared): a start that times out kills the process group and returns
// a *StartError saying so (ErrNotReady); so does a process that exits
// (non-zero for "exit") or is stopped before it is ready. Its record stays,
// failed, with its output. When ctx ends first the process is killed and
// the *StartError wraps ctx's error. Starting the same tool twice gives
// two processes.
//
// Before anything runs, Start resolves and verifies the tool against the
// lock (launcher.Verify: *launcher.RefusedError), refuses what is not an
// exec service or stream tool (ErrNotStartable), validates and encodes
// args (*launcher.ArgError), compiles the declared event schemas with
// Config.CompileSchema, prepares the command with runspec (verb "run")
// and counts it against the limits (*LimitError). A service that declares
// process.input keeps its stdin open for Send; otherwise stdin gets the
// stdin-mode arguments and is closed (v1 rule).
//
// No process runs without its record in the state dir: when it cannot be
// written (a full disk), nothing starts and the error wraps ErrNoRecord.
// When a later record of the start cannot be written, the handle comes
// with a *RecordError.
func (s *Supervisor) Start(ctx context.Context, sessionID, name string, args map[string]any, opts StartOptions) (Handle, error) {
	if err := checkSession(sessionID); err != nil {
		return Handle{}, err
	}
	lock, lockPath := s.lockSnapshot()
	env := opts.CallerEnv
	if env == nil {
		env = s.cfg.CallerEnv
	}
	plan, err := planTool(planInput{
		lock: lock, lockPath: lockPath, name: name, backends: opts.Backends,
		values: args, callerEnv: env, session: sessionID,
		compile: s.cfg.CompileSchema, timing: s.cfg.Timing, self: s.self,
		hidden:    append([]string{s.cfg.StateDir}, s.cfg.Hidden...),
		workspace: s.workspace(opts.Workspace),
	})
	if err != nil {
		return Handle{}, err
	}
	kind := KindStream
	if plan.mode == protocol.ProcessService {
		kind = KindService
	}
	p, err := s.reserve(sessionID, reservation{kind: kind, tool: plan.tool, capability: plan.capability, plan: &plan.launchPlan})
	if err != nil {
		return Handle{}, fmt.Errorf("starting %q: %w", name, err)
	}
	if err := p.launchRecorded(); err != nil {
		return Handle{}, withFix(fmt.Errorf("starting %q: %w", name, err))
	}
	select {
	case err := <-p.readyCh:
		if err != nil {
			return Handle{}, &StartError{Process: p.id, Tool: p.tool, Reason: err.Error(), Err: ErrNotReady}
		}
		return p.handle(), p.recordError()
	case <-ctx.Done():
		// A start canceled as the process became ready (select picks
		// either when both are) stops it as Stop does, with its declared
		// cancel: only a process that never got ready is killed outright.
		select {
		case err := <-p.readyCh:
			if err == nil {
				p.requestStop(false)
				<-p.done
				return Handle{}, &StartError{Process: p.id, Tool: p.tool, Reason: "start canceled as the process became ready; it was stopped with its declared cancel", Err: ctx.Err()}
			}
		default:
		}
		p.requestStop(true)
		<-p.done
		return Handle{}, &StartError{Process: p.id, Tool: p.tool, Reason: "start canceled before it was ready; the process was killed", Err: ctx.Err()}
	}
}
