package runspec

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
)

// DefaultAllowlist is the caller's environment a sandboxed tool sees when
// the toolbox file sets no env_allowlist (DESIGN.md §2, issue 3 item 4):
// enough to find programs, pick a locale and a time zone, and know who and
// where it runs. HOME is deliberately absent: a sandboxed tool gets its
// own (see Prepare).
var DefaultAllowlist = []string{"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME"}

// envSource is what composeEnv needs to know about one call.
type envSource struct {
	caller    []string // os.Environ() form
	allowlist []string // the lock's env_allowlist, nil = unset
	sandboxed bool     // the describe document declares runtime.sandbox
	home      string   // HOME of a sandboxed tool
	envdir    string   // absolute envdir, "" = none
	declared  map[string]string
	argEnv    []string
	session   string
	agentIDs  bool   // set the AGENT_* ids of a run (setAgentIDs)
	workspace string // the call's workspace ($TOOLBOX_WORKSPACE), "" = none
}

// composeEnv builds a tool's environment in the order of DESIGN.md §2, each
// step overriding the previous: the base (allowlisted or whole caller
// environment), the envdir, the declared environment, env-mode args, then
// TOOLBOX_SESSION and the caller's AGENT_* variables, then (for a run) the
// AGENT_* ids the caller did not give (setAgentIDs). The result is sorted
// "K=V" strings.
func composeEnv(s envSource) ([]string, error) {
	callerVars := parseEnv(s.caller)
	filtered := s.sandboxed || s.allowlist != nil
	env := map[string]string{}
	switch {
	case !filtered:
		env = callerVars
	default:
		allow := s.allowlist
		if allow == nil {
			allow = DefaultAllowlist
		}
		for _, name := range allow {
			if v, ok := callerVars[name]; ok {
				env[name] = v
			}
		}
	}
	if s.sandboxed {
		env["HOME"] = s.home
	}
	if s.envdir != "" {
		vars, err := ReadEnvdir(s.envdir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("envdir %q does not exist: create it (one file per variable) or run toolbox lock without the tool's envdir", s.envdir)
		}
		if err != nil {
			return nil, err
		}
		for name, v := range vars {
			if v == nil {
				delete(env, name)
			} else {
				env[name] = *v
			}
		}
	}
	for name, v := range s.declared {
		env[name] = v
	}
	for _, kv := range s.argEnv {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("env-mode argument %q is not NAME=value", kv)
		}
		env[name] = v
	}
	if s.session != "" {
		env["TOOLBOX_SESSION"] = s.session
	}
	if s.workspace != "" {
		env[WorkspaceEnv] = s.workspace
	} else {
		delete(env, WorkspaceEnv) // the caller's names no workspace of this call
	}
	if filtered {
		for name, v := range callerVars {
			if strings.HasPrefix(name, "AGENT_") {
				env[name] = v
			}
		}
	}
	if s.agentIDs {
		setAgentIDs(env)
	}
	out := make([]string, 0, len(env))
	for name, v := range env {
		out = append(out, name+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// parseEnv turns os.Environ() entries into a map; a later duplicate wins
// (as in os/exec), and entries without "=" are dropped.
func parseEnv(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if name, v, ok := strings.Cut(kv, "="); ok && name != "" {
			m[name] = v
		}
	}
	return m
}

// declaredEnvironment is describe.runtime.environment, nil when absent.
func declaredEnvironment(t *manifest.Tool) map[string]string {
	if t.Describe == nil || t.Describe.Runtime == nil {
		return nil
	}
	return t.Describe.Runtime.Environment
}
