package runspec

import (
	"fmt"
	"path/filepath"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// MCPServer turns the locked MCP server name of l into what sandbox.Start
// needs, by the rules of a tool (DESIGN.md §2, §3, §6):
//
//   - the spec: MCPServerSpec, plus the toolbox's shared tmp for a
//     sandboxed server with tmp: shared (sandbox.SharedTmpDir, created).
//   - the command: Command[0] and the arguments PathArgs names resolved
//     against lockDir, the others as locked; as working directory lockDir
//     when it is inside the server's grants or the server is unconfined,
//     else the first writable grant, else the first readable one, else
//     the executable's directory. The caller opens and verifies the
//     executable and sets the Command's Exe (launcher.OpenMCPServer).
//   - the environment: a sandboxed server gets the allowlist (the lock's
//     env_allowlist, else DefaultAllowlist) and HOME (its working
//     directory); an unconfined one the caller's environment unless the
//     lock has an env_allowlist. Then its envdir, its env, TOOLBOX_SESSION
//     when session is set and the caller's AGENT_* variables.
//
// Errors: MCPServerSpec's, a shared tmp that cannot be made safely
// (*sandbox.RefusalError), or a missing envdir.
func MCPServer(lockDir string, l *manifest.Lock, name string, callerEnv []string, session string, trust *Trust) (*sandbox.Spec, sandbox.Command, error) {
	if !filepath.IsAbs(lockDir) {
		abs, err := filepath.Abs(lockDir)
		if err != nil {
			return nil, sandbox.Command{}, fmt.Errorf("preparing mcp server %q: %w", name, err)
		}
		lockDir = abs
	}
	spec, err := MCPServerSpec(lockDir, l, name, trust)
	if err != nil {
		return nil, sandbox.Command{}, err
	}
	srv := l.MCPServers[name]
	if spec.Mechanism != sandbox.None && !spec.TmpPrivate {
		if spec.SharedTmp, spec.SharedTmpSize, err = sandbox.SharedTmpDir(trust.LockPath, trust.SharedTmpSize); err != nil {
			return nil, sandbox.Command{}, fmt.Errorf("preparing mcp server %q: %w", name, err)
		}
	}
	exe := resolve(lockDir, srv.Command[0])
	dir := lockDir
	if spec.Mechanism != sandbox.None {
		grants := append(append([]string{spec.ToolDir}, spec.Read...), spec.Write...)
		if real, err := filepath.EvalSymlinks(lockDir); err != nil || !InsideAny(real, grants) {
			dir = CommandDir(spec, spec.ToolDir)
		}
	}
	src := envSource{
		caller:    callerEnv,
		allowlist: l.EnvAllowlist,
		sandboxed: srv.Sandbox != nil,
		home:      dir,
		declared:  srv.Env,
		session:   session,
	}
	if srv.Envdir != "" {
		src.envdir = resolve(lockDir, srv.Envdir)
	}
	env, err := composeEnv(src)
	if err != nil {
		return nil, sandbox.Command{}, fmt.Errorf("preparing mcp server %q: %w", name, err)
	}
	args := append([]string(nil), srv.Command[1:]...)
	for _, i := range srv.PathArgs {
		if i >= 1 && i < len(srv.Command) {
			args[i-1] = resolve(lockDir, srv.Command[i])
		}
	}
	return spec, sandbox.Command{Path: exe, Args: args, Env: env, Dir: dir}, nil
}

// MCPServerSpec is the sandbox spec of the locked MCP server name of l,
// without the shared tmp (MCPServer adds it, creating it): the locked
// mechanism, the executable's own directory readable (a tool's directory
// is), the declared fs paths resolved against lockDir (absolute) with
// their lock-time resolutions (Paths; one naming {workspace} under
// trust's workspace, refused when it has none usable), net and tmp as
// locked, the locked
// limits, and from trust the protected and hidden paths and the pinned
// bubblewrap. A server talks stdio: it gets no unix sockets (seccomp
// denies them under net: none, as for an exec tool). The compiler calls
// it at lock time to refuse, with Spec.Check, what a start would refuse.
// Errors: the server is not in the lock, a server locked with a sandbox
// but a mechanism that cannot confine it (a lock written by hand: it never
// runs unconfined), a sandboxed server without trust.
func MCPServerSpec(lockDir string, l *manifest.Lock, name string, trust *Trust) (*sandbox.Spec, error) {
	var srv *manifest.MCPServer
	if l != nil {
		srv = l.MCPServers[name]
	}
	if srv == nil || len(srv.Command) == 0 {
		return nil, fmt.Errorf("mcp server %q is not in the lock: run toolbox lock", name)
	}
	exe := resolve(lockDir, srv.Command[0])
	spec := &sandbox.Spec{Mechanism: sandbox.None, ToolDir: filepath.Dir(exe)}
	if trust != nil {
		spec.Protected, spec.Hidden, spec.Bwrap = trust.Protected, trust.Hidden, trust.Bwrap
	}
	sb := srv.Sandbox
	if sb == nil {
		setLimits(spec, srv.Limits)
		return spec, nil
	}
	m := sandbox.Mechanism(srv.Mechanism)
	if m != sandbox.Bwrap && m != sandbox.Landlock {
		return nil, fmt.Errorf("mcp server %q is locked with a sandbox but mechanism %q, which cannot confine it; it is never run unconfined: run toolbox lock", name, srv.Mechanism)
	}
	if trust == nil {
		return nil, fmt.Errorf("mcp server %q is locked with %q and needs the lock's trusted paths (runspec.NewTrust)", name, m)
	}
	spec.Mechanism, spec.NetNone, spec.TmpPrivate = m, sb.Net == "none", sb.Tmp == "private"
	spec.Block = fmt.Sprintf("mcp_server %q", name)
	setLimits(spec, srv.Limits)
	d := declared{base: lockDir, readField: "sandbox.fs.read", writeField: "sandbox.fs.write", locked: srv.Paths, lockDir: lockDir}
	if err := d.grant(spec, sb.FS, trust); err != nil {
		return nil, err
	}
	return spec, nil
}

// MCPToken reads the bearer token of a locked MCP server reached by URL:
// the value of its TokenEnv in its envdir (daemontools rules, see
// ReadEnvdir); "" when it declares none. Errors: the server is not in the
// lock, its envdir cannot be read, or the variable is missing or empty.
func MCPToken(lockDir string, l *manifest.Lock, name string) (string, error) {
	srv := l.MCPServers[name]
	if srv == nil {
		return "", fmt.Errorf("mcp server %q is not in the lock: run toolbox lock", name)
	}
	if srv.TokenEnv == "" {
		return "", nil
	}
	dir := resolve(lockDir, srv.Envdir)
	vars, err := ReadEnvdir(dir)
	if err != nil {
		return "", fmt.Errorf("reading the token of mcp server %q: %w", name, err)
	}
	if v := vars[srv.TokenEnv]; v != nil && *v != "" {
		return *v, nil
	}
	return "", fmt.Errorf("the envdir %q of mcp server %q has no %s", dir, name, srv.TokenEnv)
}

// MinMCPSecret is the shortest envdir value MCPSecrets counts as a
// secret: an envdir holds a server's keys and tokens, and sometimes a
// short setting ("warn", "1") that, redacted, would blank every such word
// of the server's answers.
const MinMCPSecret = 8

// MCPSecrets are the values everything toolbox reports of the locked MCP
// server name must not show (DESIGN.md §4): the bearer token of a server
// reached by URL, whatever its length, and every value of its envdir (a
// path relative to lockDir) of at least MinMCPSecret bytes. The launcher
// redacts them from a call's reports, the compiler from a failing
// server's at lock. nil when it has no envdir or it cannot be read.
func MCPSecrets(lockDir string, l *manifest.Lock, name string) []string {
	s := l.MCPServers[name]
	if s == nil || s.Envdir == "" {
		return nil
	}
	return envdirSecrets(resolve(lockDir, s.Envdir), s.TokenEnv)
}

// ToolSecrets are the values of the envdir of the locked tool name (a tool
// or a plugin) of at least MinMCPSecret bytes: the envdir root holds every
// tool's keys (DESIGN.md §3), so what a call reports (output, results,
// errors, logs) redacts them as it redacts secret bindings and an MCP
// server's envdir. nil when the tool has no envdir or it cannot be read
// (the start then fails with the reason).
func ToolSecrets(lockDir string, l *manifest.Lock, name string) []string {
	return EnvdirSecrets(lockDir, l.Tools[name])
}

// EnvdirSecrets is ToolSecrets of the locked tool t (nil: none), whose
// paths are relative to lockDir: what its check's probe result, written
// into the lock and shown by check --probe, must not hold either.
func EnvdirSecrets(lockDir string, t *manifest.Tool) []string {
	if t == nil || t.Runtime.Envdir == "" {
		return nil
	}
	return envdirSecrets(resolve(lockDir, t.Runtime.Envdir), "")
}

// envdirSecrets reads the envdir dir: its values of at least MinMCPSecret
// bytes, and the value of token whatever its length.
func envdirSecrets(dir, token string) []string {
	vars, err := ReadEnvdir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for k, v := range vars {
		if v != nil && (len(*v) >= MinMCPSecret || (token != "" && k == token && *v != "")) {
			out = append(out, *v)
		}
	}
	return out
}
