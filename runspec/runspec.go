package runspec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
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
}

// Prepare turns one locked tool into what sandbox.Start needs. lockDir is
// the absolute directory of the lock: t.Path and relative runtime paths
// (envdir, rundir) are resolved against it; sandbox paths from the describe
// document against the tool's own directory. envAllowlist is the lock's
// env_allowlist (nil = unset). See the package documentation for the argv,
// environment and sandbox rules.
//
// Prepare reads the envdir and creates a missing rundir (mode 0755, owned
// by RunAs when set), nothing else: it does not hash or stat the binary.
// It fails on an unknown verb, a lock mechanism other than none, bwrap or
// landlock, a missing envdir (the error names it and the fix), an envdir
// file whose name holds "=", a malformed ArgEnv entry, or a rundir that
// cannot be created.
func Prepare(lockDir string, t *manifest.Tool, envAllowlist []string, p Params) (*sandbox.Spec, sandbox.Command, error) {
	if t == nil {
		return nil, sandbox.Command{}, errors.New("preparing tool: no tool")
	}
	if !filepath.IsAbs(lockDir) {
		abs, err := filepath.Abs(lockDir)
		if err != nil {
			return nil, sandbox.Command{}, fmt.Errorf("preparing tool %q: %w", t.Path, err)
		}
		lockDir = abs
	}
	spec, cmd, err := prepare(lockDir, t, envAllowlist, p)
	if err != nil {
		return nil, sandbox.Command{}, fmt.Errorf("preparing tool %q: %w", t.Path, err)
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
	spec, err := buildSpec(t, toolDir)
	if err != nil {
		return nil, sandbox.Command{}, err
	}
	var rundir string
	if t.Runtime.Rundir != "" {
		rundir = resolve(lockDir, t.Runtime.Rundir)
		if err := makeRundir(rundir, t.Runtime.RunAs); err != nil {
			return nil, sandbox.Command{}, err
		}
	}
	src := envSource{
		caller:    p.CallerEnv,
		allowlist: envAllowlist,
		sandboxed: declaresSandbox(t),
		home:      toolDir,
		declared:  declaredEnvironment(t),
		argEnv:    p.ArgEnv,
		session:   p.Session,
		agentIDs:  p.Verb == VerbRun,
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

// buildSpec is the sandbox spec of DESIGN.md §6 from the lock's resolved
// runtime and the describe document's declarations.
func buildSpec(t *manifest.Tool, toolDir string) (*sandbox.Spec, error) {
	spec := &sandbox.Spec{ToolDir: toolDir}
	switch m := sandbox.Mechanism(t.Runtime.Mechanism); m {
	case "", sandbox.None:
		spec.Mechanism = sandbox.None
	case sandbox.Bwrap, sandbox.Landlock:
		spec.Mechanism = m
	default:
		return nil, fmt.Errorf("runtime mechanism %q is not one a lock may hold (none, bwrap, landlock): run toolbox lock", m)
	}
	if declaresSandbox(t) {
		sb := t.Describe.Runtime.Sandbox
		if sb.FS != nil {
			spec.Read = resolveAll(toolDir, sb.FS.Read)
			spec.Write = resolveAll(toolDir, sb.FS.Write)
		}
		spec.NetNone = sb.Net == "none"
		spec.TmpPrivate = sb.Tmp == "private"
	}
	if id := t.Runtime.RunAs; id != nil {
		spec.RunAs = &sandbox.Identity{UID: id.UID, GID: id.GID, Groups: id.Groups}
	}
	spec.Limits = Limits(t.Runtime.Limits)
	return spec, nil
}

// resolveAll makes declared sandbox paths absolute against the tool's
// directory. A describe document's paths are native paths of the machine.
func resolveAll(toolDir string, paths []string) []string {
	if paths == nil {
		return nil
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		if filepath.IsAbs(p) {
			out[i] = filepath.Clean(p)
		} else {
			out[i] = filepath.Join(toolDir, p)
		}
	}
	return out
}

// makeRundir creates a missing rundir with its parents (mode 0755). When the
// tool runs as another user, the directory created last (the rundir itself)
// is given to that user, so the tool can write in its working directory;
// an existing rundir is left as it is.
func makeRundir(dir string, runAs *manifest.Identity) error {
	info, err := os.Stat(dir)
	switch {
	case err == nil && info.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("rundir %q is not a directory", dir)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("checking rundir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating rundir: %w", err)
	}
	if runAs != nil {
		if err := os.Chown(dir, int(runAs.UID), int(runAs.GID)); err != nil {
			return fmt.Errorf("giving rundir to %q: %w", runAs.User, err)
		}
	}
	return nil
}
