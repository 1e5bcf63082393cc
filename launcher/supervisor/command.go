package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

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
// c.Wait (default DefaultWait, at most MaxWait) the answer is its final
// status, else its current one (running); both carry the tail of its
// output, and the process goes on either way. It never waits past ctx.
//
// The command runs as `Shell -c Cmd` in its own session and process group,
// unsandboxed, with the caller's environment plus c.Env and
// TOOLBOX_SESSION; stdin is empty. Stop sends SIGTERM to its group, then
// SIGKILL after Timing.StopGrace. A command that leaves its process group
// (setsid) is not covered by the stop: only sandboxed tools are.
//
// Errors: ErrCommandsDisabled when the lock does not declare builtin
// "process"; ErrBadName, ErrNameInUse, *LimitError, ErrClosed; an empty
// command or a missing working directory; launcher.ErrNotFound when the
// shell is missing.
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
	dir, err := commandDir(c.Cwd)
	if err != nil {
		return Status{}, err
	}
	env, err := commandEnv(c, s.cfg.CallerEnv, sessionID)
	if err != nil {
		return Status{}, err
	}
	plan := &launchPlan{
		spec:      s.commandSpec(),
		cmd:       sandbox.Command{Path: s.shell, Args: []string{"-c", c.Cmd}, Env: env, Dir: dir},
		readyKind: readyImmediate,
		stopGrace: s.cfg.Timing.StopGrace,
		cancelSig: syscall.SIGTERM,
		onExit:    onExitReport,
		deadline:  c.Timeout,
	}
	p, err := s.reserve(sessionID, reservation{kind: KindCommand, tool: CommandTool, name: c.Name, label: c.Label, command: c.Cmd, plan: plan})
	if err != nil {
		return Status{}, fmt.Errorf("running a command: %w", err)
	}
	in, err := p.launch()
	if err != nil {
		s.release(p)
		return Status{}, fmt.Errorf("running a command: %w", err)
	}
	p.begin(in)
	go p.run(in)
	<-p.readyCh // immediate: answered at once
	wait := c.Wait
	switch {
	case wait == 0:
		wait = DefaultWait
	case wait > MaxWait:
		wait = MaxWait
	}
	p.waitDone(ctx, wait)
	return p.status(true), nil
}

// commandDir resolves and checks the working directory.
func commandDir(cwd string) (string, error) {
	if cwd == "" {
		return "", nil
	}
	dir, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("running a command: working directory %q: %w", cwd, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("running a command: working directory: %w", err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("running a command: working directory %q is not a directory", cwd)
	}
	return dir, nil
}

// commandEnv is the caller's environment, then c.Env, then TOOLBOX_SESSION.
func commandEnv(c Command, def []string, sessionID string) ([]string, error) {
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
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(c.Env[k], 0) {
			return nil, fmt.Errorf("running a command: environment variable %q: a name must be non-empty without '=' or NUL, a value without NUL", k)
		}
		set(k, c.Env[k])
	}
	set("TOOLBOX_SESSION", sessionID)
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env, nil
}

// commandSpec confines nothing but applies the locked limits of builtin
// "process" (nil when it has none).
func (s *Supervisor) commandSpec() *sandbox.Spec {
	l, _ := s.lockSnapshot()
	if l == nil || l.BuiltinLimits[CommandTool] == nil {
		return nil
	}
	return &sandbox.Spec{Mechanism: sandbox.None, Limits: runspec.Limits(l.BuiltinLimits[CommandTool])}
}
