package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// CommandCancel is the signal a background command's graceful stop sends
// to its process group, SIGKILL following after Timing.StopGrace: the
// bash-daemon seed's kill (SIGINT, "lets the process clean up"). Services
// and streams keep their declared runtime.cancel (SIGTERM by default).
const CommandCancel = syscall.SIGINT

// validName says whether s has the shape of a background command's name,
// [a-z0-9-]{1,63} (DESIGN.md §5). Checked by hand rather than with a
// package-level regexp: this package is linked into the fast `toolbox`
// binary, whose start-up must not compile anything.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// looksLikeID says whether s has the shape of a process id, p and six
// lower-case hex digits; a name may not look like one, so a reference is
// never ambiguous.
func looksLikeID(s string) bool {
	if len(s) != 7 || s[0] != 'p' {
		return false
	}
	for i := 1; i < 7; i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// RunCommand starts a background shell command for the session (builtin
// "process", DESIGN.md §5) and waits inline: when it finishes within
// c.Wait (default DefaultWait, at most MaxWait: a longer wait is capped)
// the answer is its final status and its completion is not mailed (it
// surfaces once, inline.go), else the answer is its current status
// (running) and the completion is mailed when it ends; both carry the ends
// of its output, and the process goes on either way. It never waits past
// ctx.
//
// The command runs as `Shell -c Cmd` in its own session and process group
// under the lock's builtin "process" (runspec.ProcessSpec): confined by
// its sandbox declaration, through the sandbox package as a tool is, with
// a sandboxed tool's environment (the allowlisted caller variables, HOME
// its tmp (commandHome), c.Env, TOOLBOX_SESSION; runspec.
// SandboxedCommandEnv), in c.Cwd or else runspec.CommandDir; or, only when
// the toolbox file says unconfined = true, unsandboxed with the caller's
// environment plus c.Env and TOOLBOX_SESSION. stdin is empty. Its graceful
// stop (Stop, its timeout, the session's end) is the bash-daemon seed's
// kill: SIGINT to its process group, then SIGKILL after Timing.StopGrace
// (CommandCancel). An unconfined command that leaves its process group
// (setsid) is not covered by the stop; a confined one is, as sandboxed
// tools are.
//
// Errors: ErrCommandsDisabled when the lock does not declare builtin
// "process"; ErrBadName, ErrNameInUse, *LimitError, ErrClosed; an empty
// command, a missing working directory or one outside the sandbox; a
// *sandbox.RefusalError when the sandbox cannot be honoured here;
// launcher.ErrNotFound when the shell is missing; ErrNoRecord when its
// record cannot be written (nothing runs); a *RecordError, with the
// status, when a later record could not be written.
func (s *Supervisor) RunCommand(ctx context.Context, sessionID string, c Command) (Status, error) {
	if err := checkSession(sessionID); err != nil {
		return Status{}, err
	}
	if !s.commandsEnabled() {
		return Status{}, fmt.Errorf("running a command: %w: declare builtin \"process\" {} in the toolbox file and run `toolbox lock`", ErrCommandsDisabled)
	}
	if strings.TrimSpace(c.Cmd) == "" {
		return Status{}, fmt.Errorf("running a command: the command is empty")
	}
	if c.Name != "" && (!validName(c.Name) || looksLikeID(c.Name)) {
		return Status{}, fmt.Errorf("running a command: name %q: %w (want 1 to 63 of a-z, 0-9 and '-', not shaped like a process id)", c.Name, ErrBadName)
	}
	lock, lockPath := s.lockSnapshot()
	if lock == nil {
		return Status{}, fmt.Errorf("running a command: %w: the lock is gone; run `toolbox lock`", ErrCommandsDisabled)
	}
	trust := runspec.NewTrust(lockPath, lock, append([]string{s.cfg.StateDir}, s.cfg.Hidden...)...).WithWorkspace(s.workspace(c.Workspace))
	dir, err := cwdPath(c.Cwd, trust.Workspace, trust.WorkspaceErr)
	if err != nil {
		return Status{}, err
	}
	spec, err := runspec.CommandSpec(lockPath, lock, trust)
	if err != nil {
		return Status{}, withFix(fmt.Errorf("running a command: %w", err))
	}
	var env []string
	if spec == nil || spec.Mechanism == sandbox.None {
		if err := checkDir(dir, c.Cwd); err != nil {
			return Status{}, err
		}
		if dir == "" {
			dir = trust.Workspace // "" (the supervisor's directory) when there is none
		}
		env, err = commandEnv(c, s.cfg.CallerEnv, sessionID, trust.Workspace)
	} else {
		dir, env, err = confinedCommand(c, spec, dir, lock.EnvAllowlist, s.cfg.CallerEnv, sessionID, trust.Workspace)
	}
	if err != nil {
		return Status{}, err
	}
	plan := &launchPlan{
		spec:      spec,
		cmd:       sandbox.Command{Path: s.shell, Args: []string{"-c", c.Cmd}, Env: env, Dir: dir},
		readyKind: readyImmediate,
		stopGrace: s.cfg.Timing.StopGrace,
		cancelSig: CommandCancel,
		onExit:    onExitReport,
		deadline:  c.Timeout,
		runtime:   commandRuntime(s.self, spec, dir, workDir()),
	}
	p, err := s.reserve(sessionID, reservation{kind: KindCommand, tool: CommandTool, name: c.Name, label: c.Label, command: c.Cmd, plan: plan})
	if err != nil {
		return Status{}, withFix(fmt.Errorf("running a command: %w", err))
	}
	// The inline waiter registers before the command can finish, so a
	// command that ends within the wait is never also mailed (inline.go).
	p.beginInline()
	if err := p.launchRecorded(); err != nil {
		return Status{}, withFix(fmt.Errorf("running a command: %w", err))
	}
	<-p.readyCh // immediate: answered at once
	wait := c.Wait
	switch {
	case wait == 0:
		wait = DefaultWait
	case wait > MaxWait:
		wait = MaxWait
	}
	p.waitDone(ctx, wait)
	st, _ := p.endInline(ctx)
	p.addOutput(&st, true)
	return st, p.recordError()
}

// workDir is the supervisor's working directory ("" when unknown).
func workDir() string {
	wd, _ := os.Getwd()
	return wd
}

// cwdPath resolves the working directory cwd without looking at it: a
// relative one is relative to the call's workspace (ws), and refused when
// the call has none (wsErr says why): the supervisor's own directory means
// nothing to a daemon's caller. checkDir looks at it, after a confined
// command's grants were checked (so that a caller learns nothing of host
// paths outside them).
func cwdPath(cwd, ws string, wsErr error) (string, error) {
	if cwd == "" {
		return "", nil
	}
	dir := filepath.Clean(cwd)
	if !filepath.IsAbs(cwd) {
		if ws == "" {
			return "", fmt.Errorf("running a command: working directory %q is relative to the workspace, and this call has none (%v); or give an absolute working directory", cwd, wsErr)
		}
		dir = filepath.Join(ws, cwd)
	}
	return dir, nil
}

// checkDir refuses a working directory dir (cwd as given) that is missing
// or not a directory; "" (the default) passes.
func checkDir(dir, cwd string) error {
	if dir == "" {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("running a command: working directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("running a command: working directory %q is not a directory", cwd)
	}
	return nil
}

// confinedCommand is the working directory and environment of a command
// confined by spec: dir when given (it must lie inside the sandbox's
// paths), else runspec.CommandDir of the workspace (ws), or of the
// supervisor's own directory when there is none; the environment of
// runspec.SandboxedCommandEnv.
func confinedCommand(c Command, spec *sandbox.Spec, dir string, allowlist, def []string, sessionID, ws string) (string, []string, error) {
	grants := append(append([]string(nil), spec.Write...), spec.Read...)
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			wd = "/"
		}
		if ws != "" {
			wd = ws
		}
		dir = runspec.CommandDir(spec, wd)
	} else if real, err := filepath.EvalSymlinks(dir); (err != nil && !runspec.InsideAny(dir, grants)) || (err == nil && !runspec.InsideAny(real, grants)) {
		// Said alike whether dir exists or not: the caller (an agent)
		// learns nothing of the host outside the grants.
		return "", nil, fmt.Errorf("running a command: working directory %q is outside the sandbox of builtin \"process\" (it may use %s); pass a cwd inside them, or widen the sandbox in the toolbox file", dir, strings.Join(uniq(grants), ", "))
	} else if err := checkDir(dir, c.Cwd); err != nil {
		return "", nil, err
	}
	if err := checkEnv(c.Env); err != nil {
		return "", nil, err
	}
	base := c.CallerEnv
	if base == nil {
		base = def
	}
	env, err := runspec.SandboxedCommandEnv(base, allowlist, commandHome(spec), c.Env, sessionID, ws)
	if err != nil {
		return "", nil, fmt.Errorf("running a command: %w", err)
	}
	return dir, env, nil
}

// commandHome is HOME of a confined command: its tmp as the sandbox shows
// it (bwrap always mounts one at /tmp; landlock grants the toolbox's shared
// tmp at its own path), never the working directory. What programs keep
// under HOME (Go's build and module caches, ~/.config, shell history)
// then lands in the toolbox's scratch space, not in the operator's
// project.
func commandHome(spec *sandbox.Spec) string {
	if spec.Mechanism == sandbox.Landlock && spec.SharedTmp != "" {
		return spec.SharedTmp
	}
	return "/tmp"
}

// checkEnv refuses variables no environment can hold.
func checkEnv(vars map[string]string) error {
	for k, v := range vars {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("running a command: environment variable %q: a name must be non-empty without '=' or NUL, a value without NUL", k)
		}
	}
	return nil
}

// commandEnv is the caller's environment, then c.Env, then TOOLBOX_SESSION
// and TOOLBOX_WORKSPACE (the call's workspace ws; the caller's is dropped
// when there is none).
func commandEnv(c Command, def []string, sessionID, ws string) ([]string, error) {
	base := c.CallerEnv
	if base == nil {
		base = def
	}
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			set(k, v)
		}
	}
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if err := checkEnv(c.Env); err != nil {
		return nil, err
	}
	for _, k := range keys {
		set(k, c.Env[k])
	}
	set("TOOLBOX_SESSION", sessionID)
	if ws != "" {
		set(runspec.WorkspaceEnv, ws)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		if k != runspec.WorkspaceEnv || ws != "" {
			env = append(env, k+"="+vars[k])
		}
	}
	return env, nil
}

// workspace is the workspace of one start: the caller's choice, else the
// supervisor's (Config.Workspace).
func (s *Supervisor) workspace(w runspec.Workspace) runspec.Workspace {
	if w.Dir != "" {
		return w
	}
	return s.cfg.Workspace
}

// uniq is paths without repeats, in their order (a path both read and
// written is named once).
func uniq(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// withFix adds to err's text the fix of the *sandbox.RefusalError it
// wraps, when the text lacks it: the daemon passes errors on as text, and
// a refusal at start (a landlock write grant over the lock, say) must say
// what to do, as `toolbox run` does.
func withFix(err error) error {
	var r *sandbox.RefusalError
	if errors.As(err, &r) && r.Fix != "" && !strings.Contains(err.Error(), r.Fix) {
		return fmt.Errorf("%w; %s", err, r.Fix)
	}
	return err
}
