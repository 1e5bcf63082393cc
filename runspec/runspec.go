package runspec

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Verbs of the tool protocol (DESIGN.md §2).
const (
	VerbRun      = "run"
	VerbDescribe = "describe"
	VerbCheck    = "check"
	VerbHelp     = "help"
)

// Params are the per-call inputs of Prepare. The zero value is not usable:
// Verb is required.
type Params struct {
	// Tool is the tool's name in the lock, which errors name it by (its
	// binary's path when empty).
	Tool string
	// Verb is VerbRun, VerbDescribe, VerbCheck or VerbHelp.
	Verb string
	// Argv are the arguments after the verb (encoded args for "run"; for a
	// command of a multi-command binary, after the command name).
	Argv []string
	// ArgEnv are "NAME=value" variables of env-mode args.
	ArgEnv []string
	// Stdin is written to the tool's stdin then closed (nil = empty).
	Stdin []byte
	// CallerEnv is the caller's environment (os.Environ()).
	CallerEnv []string
	// Session is the TOOLBOX_SESSION value ("" = set none).
	Session string
	// Trust is what the run keeps out of the tool's reach and pins (see
	// NewTrust). Required for a tool locked with bwrap or landlock.
	Trust *Trust
}

// Prepare turns one locked tool into what sandbox.Start needs. lockDir is
// the absolute directory of the lock: t.Path and relative runtime paths
// (envdir, rundir) are resolved against it; sandbox paths from the describe
// document against the tool's own directory. envAllowlist is the lock's
// env_allowlist (nil = unset). See the package documentation for the argv,
// environment and sandbox rules.
//
// Prepare reads the envdir, creates the toolbox's shared tmp for a
// sandboxed tool with tmp: shared (sandbox.SharedTmpDir) and creates a
// missing rundir (sandbox.Spec.MakeRundir: mode 0755, no symlink followed,
// given to RunAs only inside a writable grant), nothing else: it does not
// hash or stat the binary (the caller opens it, checks its hash and sets
// the Command's Exe). It fails on an unknown verb, a lock mechanism other
// than none, bwrap or landlock, a sandboxed tool without Params.Trust, a
// missing envdir (the error names it and the fix), an envdir file whose
// name holds "=", a malformed ArgEnv entry, a shared tmp or rundir that
// cannot be made safely (*sandbox.RefusalError).
func Prepare(lockDir string, t *manifest.Tool, envAllowlist []string, p Params) (*sandbox.Spec, sandbox.Command, error) {
	if t == nil {
		return nil, sandbox.Command{}, errors.New("preparing tool: no tool")
	}
	what := fmt.Sprintf("tool %q", p.Tool)
	if p.Tool == "" {
		what = fmt.Sprintf("the tool at %q", t.Path)
	}
	if !filepath.IsAbs(lockDir) {
		abs, err := filepath.Abs(lockDir)
		if err != nil {
			return nil, sandbox.Command{}, fmt.Errorf("preparing %s: %w", what, err)
		}
		lockDir = abs
	}
	spec, cmd, err := prepare(lockDir, t, envAllowlist, p)
	if err != nil {
		return nil, sandbox.Command{}, fmt.Errorf("preparing %s: %w", what, err)
	}
	return spec, cmd, nil
}

func prepare(lockDir string, t *manifest.Tool, envAllowlist []string, p Params) (*sandbox.Spec, sandbox.Command, error) {
	args, err := argv(t, p)
	if err != nil {
		return nil, sandbox.Command{}, err
	}
	binary := resolve(lockDir, t.Path)
	toolDir := filepath.Dir(binary)
	spec, err := Spec(lockDir, t, p.Trust)
	if err != nil {
		return nil, sandbox.Command{}, err
	}
	if spec.Mechanism != sandbox.None && !spec.TmpPrivate {
		if spec.SharedTmp, spec.SharedTmpSize, err = sandbox.SharedTmpDir(p.Trust.LockPath, p.Trust.SharedTmpSize); err != nil {
			return nil, sandbox.Command{}, err
		}
	}
	var rundir string
	if t.Runtime.Rundir != "" {
		if rundir, err = rundirPath(lockDir, t.Runtime.Rundir, p.Trust); err != nil {
			return nil, sandbox.Command{}, err
		}
		if err := spec.MakeRundir(rundir); err != nil {
			return nil, sandbox.Command{}, err
		}
	}
	workspace, _ := p.Trust.callWorkspace()
	src := envSource{
		caller:    p.CallerEnv,
		allowlist: envAllowlist,
		sandboxed: declaresSandbox(t),
		home:      toolDir,
		declared:  declaredEnvironment(t),
		argEnv:    p.ArgEnv,
		session:   p.Session,
		agentIDs:  p.Verb == VerbRun,
		workspace: workspace,
	}
	if rundir != "" {
		src.home = rundir
	}
	if t.Runtime.Envdir != "" {
		src.envdir = resolve(lockDir, t.Runtime.Envdir)
	}
	env, err := composeEnv(src)
	if err != nil {
		return nil, sandbox.Command{}, err
	}
	cmd := sandbox.Command{Path: binary, Args: args, Env: env, Dir: rundir}
	if p.Stdin != nil {
		cmd.Stdin = bytes.NewReader(p.Stdin)
	}
	return spec, cmd, nil
}

// argv is the verb, the command name for a command of a multi-command
// binary (run and help only), then p.Argv.
func argv(t *manifest.Tool, p Params) ([]string, error) {
	switch p.Verb {
	case VerbRun, VerbHelp:
		if t.Command != "" {
			return append([]string{p.Verb, t.Command}, p.Argv...), nil
		}
	case VerbDescribe, VerbCheck:
	default:
		return nil, fmt.Errorf("unknown verb %q (want run, describe, check or help)", p.Verb)
	}
	return append([]string{p.Verb}, p.Argv...), nil
}

// resolve turns a slash path from the lock into an absolute path: as it is
// when absolute, else under base.
func resolve(base, slashPath string) string {
	p := filepath.FromSlash(slashPath)
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

func declaresSandbox(t *manifest.Tool) bool {
	return t.Describe != nil && t.Describe.Runtime != nil && t.Describe.Runtime.Sandbox != nil
}

// Spec is the sandbox spec of DESIGN.md §6 for locked tool t, without the
// shared tmp (Prepare adds it, creating it): the lock's mechanism, the
// describe document's declarations resolved against the tool's directory
// with their lock-time resolutions (Runtime.Paths), run_as, and from
// trust the protected and hidden paths and the pinned bubblewrap, and for
// a sandboxed plugin UnixSockets. lockDir is the lock's absolute
// directory. The compiler calls it at lock time to refuse, with
// Spec.Check, what a start would refuse. Errors: a mechanism a lock may
// not hold, a sandboxed tool without trust.
func Spec(lockDir string, t *manifest.Tool, trust *Trust) (*sandbox.Spec, error) {
	toolDir := filepath.Dir(resolve(lockDir, t.Path))
	spec := &sandbox.Spec{ToolDir: toolDir}
	switch m := sandbox.Mechanism(t.Runtime.Mechanism); m {
	case "", sandbox.None:
		spec.Mechanism = sandbox.None
	case sandbox.Bwrap, sandbox.Landlock:
		spec.Mechanism = m
		if trust == nil {
			return nil, fmt.Errorf("a tool locked with %q needs the lock's trusted paths (runspec.NewTrust)", m)
		}
	default:
		return nil, fmt.Errorf("runtime mechanism %q is not one a lock may hold (none, bwrap, landlock): run toolbox lock", m)
	}
	if trust != nil {
		spec.Protected, spec.Hidden, spec.Bwrap = trust.Protected, trust.Hidden, trust.Bwrap
	}
	if declaresSandbox(t) {
		sb := t.Describe.Runtime.Sandbox
		d := declared{base: toolDir, readField: sandbox.FieldRead, writeField: sandbox.FieldWrite, locked: t.Runtime.Paths, lockDir: lockDir}
		if err := d.grant(spec, sb.FS, trust); err != nil {
			return nil, err
		}
		spec.NetNone = sb.Net == "none"
		spec.TmpPrivate = sb.Tmp == "private"
	}
	if id := t.Runtime.RunAs; id != nil {
		spec.RunAs = &sandbox.Identity{UID: id.UID, GID: id.GID, Groups: id.Groups}
	}
	// A sandboxed plugin listens on a unix socket (go-plugin's handshake):
	// so that the lock-time check refuses what its start would (landlock
	// as uid 0, sandbox.Spec.UnixSockets). Its socket directory is added
	// at start (sandbox.Spec.ForPlugin).
	spec.UnixSockets = t.Kind == manifest.KindPlugin && spec.Mechanism != sandbox.None
	setLimits(spec, t.Runtime.Limits)
	return spec, nil
}
