package runspec

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// ProcessSpec is the sandbox spec every background command of the lock's
// builtin "process" runs under (DESIGN.md §5): nil for an unconfined
// builtin (unconfined = true in the toolbox file), else its mechanism and
// its fs paths resolved against lockDir (the lock's absolute directory),
// net and tmp as locked. The spec has no ToolDir: a command sees its
// grants and the system directories only. trust (NewTrust) fills in what
// the commands may never reach or change, the pinned bwrap and the shared
// tmp; nil only to describe the spec, never to start it (a bwrap start
// without the pin is refused). A confined builtin locked with a mechanism
// other than bwrap or landlock (a lock written by hand) is refused:
// background commands never run weaker than declared.
func ProcessSpec(lockDir string, pb *manifest.ProcessBuiltin, trust *Trust) (*sandbox.Spec, error) {
	if pb == nil {
		return nil, fmt.Errorf("the lock has no builtin \"process\": run toolbox lock")
	}
	if pb.Unconfined {
		return nil, nil
	}
	m := sandbox.Mechanism(pb.Mechanism)
	if (m != sandbox.Bwrap && m != sandbox.Landlock) || pb.Sandbox == nil {
		return nil, fmt.Errorf("builtin \"process\" is locked confined with mechanism %q and sandbox %v, which cannot confine it; it is never run unconfined: run toolbox lock", pb.Mechanism, pb.Sandbox != nil)
	}
	sb := pb.Sandbox
	spec := &sandbox.Spec{Mechanism: m, NetNone: sb.Net == "none", TmpPrivate: sb.Tmp == "private", Block: `builtin "process"`}
	if trust != nil {
		// What a later run trusts stays out of the commands' reach, as
		// out of a tool's (DESIGN.md §6, D2), and bwrap is the pinned one.
		spec.Protected, spec.Hidden, spec.Bwrap = trust.Protected, trust.Hidden, trust.Bwrap
		if !spec.TmpPrivate {
			var err error
			if spec.SharedTmp, spec.SharedTmpSize, err = sandbox.SharedTmpDir(trust.LockPath, trust.SharedTmpSize); err != nil {
				return nil, err
			}
		}
	}
	d := declared{base: lockDir, readField: "sandbox.fs.read", writeField: "sandbox.fs.write", keepWorkspace: true}
	if err := d.grant(spec, sb.FS, trust); err != nil {
		return nil, err
	}
	return spec, nil
}

// CommandSpec is the spec every background command of lock l (at
// lockPath, absolute) runs under: ProcessSpec under trust with the
// builtin's locked limits (lock.BuiltinLimits["process"]); for an
// unconfined builtin a None spec carrying only those limits, or nil when
// it has none. Errors are ProcessSpec's.
func CommandSpec(lockPath string, l *manifest.Lock, trust *Trust) (*sandbox.Spec, error) {
	spec, err := ProcessSpec(filepath.Dir(lockPath), l.Process, trust)
	if err != nil {
		return nil, err
	}
	lim := l.BuiltinLimits[manifest.BuiltinProcess]
	switch {
	case lim == nil:
	case spec == nil:
		spec = &sandbox.Spec{Mechanism: sandbox.None}
		setLimits(spec, lim)
	default:
		setLimits(spec, lim)
	}
	return spec, nil
}

// CommandDir is the working directory of a confined background command
// given none: dir (the call's workspace, or the supervisor's own directory
// when the call has none) when it lies inside one of the spec's grants,
// else the first writable path, else the first readable one, else "/".
// Paths are compared with their symlinks resolved.
func CommandDir(spec *sandbox.Spec, dir string) string {
	grants := append(append([]string(nil), spec.Write...), spec.Read...)
	if real, err := filepath.EvalSymlinks(dir); err == nil && InsideAny(real, grants) {
		return dir
	}
	if len(grants) > 0 {
		return grants[0]
	}
	return "/"
}

// InsideAny reports whether the path p (symlinks resolved) is one of
// paths or lies below one, each taken with its symlinks resolved.
func InsideAny(p string, paths []string) bool {
	for _, g := range paths {
		if real, err := filepath.EvalSymlinks(g); err == nil {
			if p == real || real == "/" || strings.HasPrefix(p, real+"/") {
				return true
			}
		}
	}
	return false
}

// SandboxedCommandEnv is the environment of a confined background
// command, built by the rules of a sandboxed tool (package doc): the
// caller's variables named by allowlist (DefaultAllowlist when nil), HOME
// set to home (the command's tmp, so that caches stay out of the
// workspace), the command's own
// variables (extra, in place of env-mode arguments), TOOLBOX_SESSION when
// session is set, TOOLBOX_WORKSPACE when workspace is (the call's, see
// Trust.Workspace) and the caller's AGENT_* variables. Sorted.
func SandboxedCommandEnv(caller, allowlist []string, home string, extra map[string]string, session, workspace string) ([]string, error) {
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names)
	argEnv := make([]string, 0, len(extra))
	for _, k := range names {
		argEnv = append(argEnv, k+"="+extra[k])
	}
	return composeEnv(envSource{caller: caller, allowlist: allowlist, sandboxed: true, home: home, argEnv: argEnv, session: session, workspace: workspace})
}
