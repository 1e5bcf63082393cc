package runspec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// WorkspaceEnv is the variable that names the workspace: read by the CLI
// (below --workspace) and set for every tool and background command whose
// call has a workspace (DESIGN.md §2, §7).
const WorkspaceEnv = "TOOLBOX_WORKSPACE"

// WorkspaceSource says where a call's workspace came from, in precedence
// order: the first that names one wins (DESIGN.md §7).
type WorkspaceSource string

// Workspace sources, strongest first.
const (
	FromFlag WorkspaceSource = "--workspace"
	FromEnv  WorkspaceSource = "$" + WorkspaceEnv
	FromFile WorkspaceSource = "the toolbox file's workspace"
	FromCwd  WorkspaceSource = "the current directory"
)

// Workspace is the workspace a caller chose, not yet resolved: Dir as
// given (relative paths are relative to the caller's working directory),
// From where it came from. The zero value chooses nothing: the toolbox
// file's default applies, else the current directory (Trust.WithWorkspace).
type Workspace struct {
	Dir  string
	From WorkspaceSource
}

// WorkspaceEnvIn is the value env gives $TOOLBOX_WORKSPACE (WorkspaceEnv):
// env holds "K=V" entries as os.Environ does, a later one winning; "" when
// unset. A server reads it from its caller's environment, not its own.
func WorkspaceEnvIn(env []string) string { return parseEnv(env)[WorkspaceEnv] }

// ChooseWorkspace is the caller's explicit choice: flag (--workspace) when
// not "", else env (the value of $TOOLBOX_WORKSPACE) when not "", else the
// zero Workspace. Dir is made absolute against the current directory, so
// that the choice means the same to a daemon whose directory differs.
func ChooseWorkspace(flag, env string) (Workspace, error) {
	w := Workspace{Dir: flag, From: FromFlag}
	if flag == "" {
		w = Workspace{Dir: env, From: FromEnv}
	}
	if w.Dir == "" {
		return Workspace{}, nil
	}
	abs, err := filepath.Abs(w.Dir)
	if err != nil {
		return Workspace{}, fmt.Errorf("%s %q: %w", w.From, w.Dir, err)
	}
	w.Dir = abs
	return w, nil
}

// WorkspaceError says why a chosen workspace cannot be used. A tool that
// names the workspace (protocol.WorkspaceToken) is refused with it; the
// others run without TOOLBOX_WORKSPACE.
type WorkspaceError struct {
	Dir  string
	From WorkspaceSource
	// Reason says what is wrong, in one lower-case phrase; Fix what to do.
	Reason string
	Fix    string
}

// Error names the directory, where it came from, the reason and the fix.
func (e *WorkspaceError) Error() string {
	return fmt.Sprintf("workspace %q (%s) %s; %s", e.Dir, e.From, e.Reason, e.Fix)
}

const fixWorkspace = "name the project's directory with --workspace DIR or $" + WorkspaceEnv

// ErrNoWorkspace is the WorkspaceErr of a Trust that never chose one
// (the compiler's, or a caller that did not call WithWorkspace).
var ErrNoWorkspace = errors.New("no workspace was chosen for this call")

// systemTrees are directories no workspace may be or lie in: the system
// that every sandbox shows read-only, and the kernel's pseudo file systems.
// A write grant there would hand the system to a tool; a read grant of /proc
// or /sys would show the host's processes and devices.
var systemTrees = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/boot", "/proc", "/sys", "/dev"}

// WithWorkspace chooses and resolves the workspace of the calls t serves
// and returns t: w when it names one, else the lock's default (the toolbox
// file's workspace attribute, relative to the lock's directory), else the
// current directory. The result is ResolveWorkspace's: Workspace set, or
// WorkspaceErr saying why none can be used. It resolves once, now: a call
// then opens that directory without following links (sandbox.Spec.Resolved).
func (t *Trust) WithWorkspace(w Workspace) *Trust {
	if w.Dir == "" && t.defaultWorkspace != "" {
		w = Workspace{Dir: t.defaultWorkspace, From: FromFile}
	}
	if w.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Workspace, t.WorkspaceErr = "", &WorkspaceError{Dir: ".", From: FromCwd, Reason: fmt.Sprintf("cannot be read: %v", err), Fix: fixWorkspace}
			return t
		}
		w = Workspace{Dir: wd, From: FromCwd}
	}
	t.Workspace, t.WorkspaceErr = t.ResolveWorkspace(w)
	return t
}

// ResolveWorkspace resolves w as a workspace of t's lock (DESIGN.md §6):
// made absolute, every symlink followed once, and then refused
// (*WorkspaceError) when it is not an existing directory, or is "/" or
// the host's /tmp, or is or lies inside a system directory (/usr, /etc,
// /proc…), a hidden directory (the state dir, the envdir root) or the
// toolbox's shared tmp. A workspace that came from the current directory
// is also refused when it is the caller's home directory or above it
// ($HOME): an MCP client started in one would otherwise hand the agent
// every key and credential there; name such a directory explicitly to use
// it. What lies inside an accepted workspace (the toolbox file, the lock,
// the binaries, when the toolbox is kept there) is protected as inside
// any grant: masked by bwrap, refused by landlock for writes.
func (t *Trust) ResolveWorkspace(w Workspace) (string, error) {
	fail := func(reason, fix string) (string, error) {
		return "", &WorkspaceError{Dir: w.Dir, From: w.From, Reason: reason, Fix: fix}
	}
	abs, err := filepath.Abs(w.Dir)
	if err != nil {
		return fail(err.Error(), fixWorkspace)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fail("does not exist or cannot be resolved", "create it, or "+fixWorkspace)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return fail("is not a directory", fixWorkspace)
	}
	if strings.Contains(real, protocol.WorkspaceToken) {
		return fail("has "+protocol.WorkspaceToken+" in its path, which declared paths reserve", "rename the directory, or "+fixWorkspace)
	}
	if real == "/" || real == hostTmp() {
		return fail(fmt.Sprintf("is %s, which would hand the whole of it to every tool", real), fixWorkspace)
	}
	for _, d := range systemTrees {
		if within(real, d) {
			return fail(fmt.Sprintf("lies in the system directory %s", d), fixWorkspace)
		}
	}
	// Protected holds files only (binaries, the lock, the toolbox file),
	// which no directory lies in: the directories to keep out are Hidden.
	guarded := slices.Clip(t.Hidden)
	if t.LockPath != "" {
		if tmp, err := sandbox.SharedTmpPath(t.LockPath); err == nil {
			guarded = append(guarded, tmp)
		}
	}
	for _, g := range guarded {
		if r, err := filepath.EvalSymlinks(g); err == nil && within(real, r) {
			return fail(fmt.Sprintf("lies in %s, which toolbox keeps from every tool", r), fixWorkspace)
		}
	}
	if w.From == FromCwd {
		if home, err := os.UserHomeDir(); err == nil {
			if h, err := filepath.EvalSymlinks(home); err == nil && within(h, real) {
				return fail(fmt.Sprintf("holds the home directory %s, where keys and credentials live", h), "run toolbox from the project's directory, or "+fixWorkspace+" (an explicit choice is honoured)")
			}
		}
	}
	return real, nil
}

// within reports whether p is dir or lies below it (both clean, absolute).
func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// hostTmp is the host's /tmp, resolved.
func hostTmp() string {
	if r, err := filepath.EvalSymlinks("/tmp"); err == nil {
		return r
	}
	return "/tmp"
}

// ResolvePath turns a declared path into a host path: one naming the
// workspace (protocol.WorkspaceToken) under the call's workspace, an
// absolute one cleaned, a relative one under base. Declarations of the
// toolbox file (builtin "process", MCP servers) pass the lock's
// directory as base; a tool's runtime.sandbox paths its own directory.
// ws is the call's resolved workspace ("" when none: then a path naming
// it fails with wsErr, else ErrNoWorkspace). ok says whether p named the
// workspace.
func ResolvePath(base, p, ws string, wsErr error) (resolved string, ok bool, err error) {
	rel, ok, err := protocol.WorkspacePath(filepath.ToSlash(p))
	switch {
	case err != nil:
		return "", false, err
	case !ok:
		if filepath.IsAbs(p) {
			return filepath.Clean(p), false, nil
		}
		return filepath.Join(base, filepath.FromSlash(p)), false, nil
	case ws == "":
		if wsErr == nil {
			wsErr = ErrNoWorkspace
		}
		return "", true, fmt.Errorf("path %q names the workspace: %w", p, wsErr)
	}
	return filepath.Join(ws, filepath.FromSlash(rel)), true, nil
}

// UsesWorkspace reports whether anything in l names the workspace: a
// tool's declared paths or rundir, or the builtin "process" paths. A
// server whose calls have no usable workspace refuses to start for such a
// lock, rather than fail every call.
func UsesWorkspace(l *manifest.Lock) bool {
	if l == nil {
		return false
	}
	names := func(paths ...string) bool {
		for _, p := range paths {
			if _, ok, _ := protocol.WorkspacePath(p); ok {
				return true
			}
		}
		return false
	}
	fsNames := func(sb *protocol.Sandbox) bool {
		return sb != nil && sb.FS != nil && (names(sb.FS.Read...) || names(sb.FS.Write...))
	}
	for _, t := range l.Tools {
		if t == nil {
			continue
		}
		if names(t.Runtime.Rundir) || (t.Describe != nil && t.Describe.Runtime != nil && fsNames(t.Describe.Runtime.Sandbox)) {
			return true
		}
	}
	for _, srv := range l.MCPServers {
		if srv != nil && fsNames(srv.Sandbox) {
			return true
		}
	}
	return l.Process != nil && fsNames(l.Process.Sandbox)
}

// callWorkspace is the call's workspace and why it has none: ("", nil)
// without a trust (ResolvePath then says ErrNoWorkspace).
func (t *Trust) callWorkspace() (string, error) {
	if t == nil {
		return "", nil
	}
	return t.Workspace, t.WorkspaceErr
}

// declared says how one sandbox declaration's fs paths (a tool's
// runtime.sandbox, an MCP server's or builtin "process"'s sandbox) become
// the spec's grants: grant is its one implementation.
type declared struct {
	// base is what relative paths are against: the tool's directory, or
	// the lock's for what the toolbox file declares.
	base string
	// readField and writeField name the declarations in a refusal.
	readField, writeField string
	// locked are the lock-time resolutions of the paths that have one
	// (Runtime.Paths, MCPServer.Paths), relative to lockDir's real
	// directory; nil for none.
	locked  map[string]string
	lockDir string
	// keepWorkspace: without a trust (a spec only described, never
	// started), a path naming the workspace stays as declared,
	// "{workspace}/…"; otherwise it is refused.
	keepWorkspace bool
}

// grant fills spec.Read and spec.Write from fs: a path naming the
// workspace under the call's workspace (workspaceGrant: its own entry in
// spec.Resolved), an absolute one cleaned, the others under d.base; then
// each path with a lock-time resolution gets it in spec.Resolved. A
// nil fs grants nothing.
func (d declared) grant(spec *sandbox.Spec, fs *protocol.FS, trust *Trust) error {
	if fs == nil {
		return nil
	}
	paths := func(ps []string, field string) ([]string, error) {
		var out []string
		for _, p := range ps {
			if _, named, _ := protocol.WorkspacePath(p); named && trust == nil && d.keepWorkspace {
				out = append(out, p)
				continue
			}
			r, err := workspaceGrant(spec, d.base, p, field, trust)
			if err != nil {
				var r *sandbox.RefusalError
				if spec.Block != "" && !errors.As(err, &r) {
					return nil, fmt.Errorf("%s: %w", spec.Block, err)
				}
				return nil, spec.AsDeclared(err) // names a block's own sandbox (Spec.Block)
			}
			out = append(out, r)
		}
		return out, nil
	}
	var err error
	if spec.Read, err = paths(fs.Read, d.readField); err != nil {
		return err
	}
	if spec.Write, err = paths(fs.Write, d.writeField); err != nil {
		return err
	}
	if len(d.locked) == 0 {
		return nil
	}
	// The lock's resolutions are relative to the lock's real directory
	// (no tool can move it: it holds the protected lock).
	realLockDir := d.lockDir
	if r, err := filepath.EvalSymlinks(d.lockDir); err == nil {
		realLockDir = r
	}
	for _, p := range append(slices.Clone(fs.Read), fs.Write...) {
		if _, named, _ := protocol.WorkspacePath(p); named {
			continue // never resolved at lock
		}
		if r, ok := d.locked[p]; ok {
			if spec.Resolved == nil {
				spec.Resolved = map[string]string{}
			}
			spec.Resolved[resolve(d.base, p)] = resolve(realLockDir, r)
		}
	}
	return nil
}

// workspaceGrant resolves one declared path (ResolvePath). A path naming
// the workspace is not resolved again at start: the workspace is resolved
// already (Trust.WithWorkspace), and nothing below it may go through a
// symlink, which would lead a grant of "{workspace}/out" wherever a tool
// or the agent pointed out. So it becomes its own entry in spec.Resolved,
// which the sandbox opens with RESOLVE_NO_SYMLINKS: a link planted later
// is refused there; one present now is refused here, naming it.
func workspaceGrant(spec *sandbox.Spec, base, p, field string, trust *Trust) (string, error) {
	ws, wsErr := trust.callWorkspace()
	r, named, err := ResolvePath(base, p, ws, wsErr)
	if err != nil || !named {
		return r, err
	}
	for d := r; d != ws && within(d, ws); d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return "", &sandbox.RefusalError{Field: field, Mechanism: spec.Mechanism,
				Reason: fmt.Sprintf("declared path %q goes through the symlink %s in the workspace; toolbox follows no link below the workspace", p, d),
				Fix:    "replace the symlink by a real directory, or declare the path it points to"}
		}
	}
	if spec.Resolved == nil {
		spec.Resolved = map[string]string{}
	}
	spec.Resolved[r] = r
	return r, nil
}

// rundirPath is the host path of the lock's rundir: one naming the
// workspace under the call's workspace, else relative to the lock's
// directory.
func rundirPath(lockDir, rundir string, trust *Trust) (string, error) {
	ws, wsErr := trust.callWorkspace()
	r, _, err := ResolvePath(lockDir, rundir, ws, wsErr)
	if err != nil {
		return "", fmt.Errorf("runtime.rundir: %w", err)
	}
	return r, nil
}
