package runspec

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Trust is what every run of a lock's tools must keep out of the tools'
// reach and pin (DESIGN.md §6, decisions D1, D2, D4): it becomes the
// sandbox.Spec's Protected, Hidden, Bwrap and SharedTmp. Build it with
// NewTrust from a lock at run time, or with TrustOf (the compiler, at lock
// time, from the toolbox file). Prepare requires one for a tool locked with bwrap or
// landlock.
type Trust struct {
	// LockPath is the lock's absolute path: it names the toolbox's shared
	// tmp (sandbox.SharedTmpDir).
	LockPath string
	// SharedTmpSize is the size in bytes of the toolbox's shared tmp
	// (manifest.Lock.SharedTmpBytes; 0: unlimited, a plain directory):
	// what sandbox.SharedTmpDir bounds it to.
	SharedTmpSize uint64
	// Protected are the host files a later run trusts (see
	// sandbox.Spec.Protected): directories to keep from tools go in
	// Hidden, which ResolveWorkspace also keeps workspaces out of.
	Protected []string
	// Hidden are the host directories no tool may reach (the state dir in
	// use, the envdir root).
	Hidden []string
	// Bwrap is the lock's pinned bubblewrap; nil when no tool uses it.
	Bwrap *sandbox.BwrapPin
	// Workspace is the workspace of the calls this Trust serves
	// (WithWorkspace): absolute, symlinks resolved, checked. It is what
	// protocol.WorkspaceToken names in declared paths and rundirs, and
	// what tools get in $TOOLBOX_WORKSPACE. "" when there is none:
	// WorkspaceErr then says why, and a tool naming the workspace is
	// refused with it (ErrNoWorkspace when none was ever chosen).
	Workspace    string
	WorkspaceErr error
	// defaultWorkspace is the lock's default workspace, absolute; "" when
	// the toolbox file sets none.
	defaultWorkspace string
}

// Guarded names what a Trust keeps from tools, before the paths are
// resolved: each path is absolute or relative to the lock's directory; ""
// entries are skipped. NewTrust fills it from a lock, the compiler from a
// toolbox file before its lock exists; TrustOf turns it into the lists.
type Guarded struct {
	// ToolboxFile is the toolbox file the lock belongs to.
	ToolboxFile string
	// EnvdirRoot is the envdir root (hidden: every tool's secrets).
	EnvdirRoot string
	// Binaries are every locked binary: tools, plugins, the MCP servers'
	// executables and entry scripts, protected in the order given (each
	// once).
	Binaries []string
	// Bwrap is the pinned bubblewrap; nil when none is pinned.
	Bwrap *sandbox.BwrapPin
	// Hidden are further directories no tool may reach (the state dir
	// the caller uses: its records, logs and socket); relative ones are
	// made absolute against the working directory.
	Hidden []string
}

// NewTrust is the Trust of lock l at lockPath (absolute), its shared tmp
// of l's size (the default for a nil l): protected are
// the lock, the toolbox file, every locked binary (tools, plugins, the
// MCP servers' executables and entry scripts), the pinned bubblewrap and
// toolbox's own executables (SelfExecutables); hidden are the envdir root
// (every tool's and server's secrets) and the hidden directories that are
// not "" (the state dir the caller uses: its records, logs and socket).
func NewTrust(lockPath string, l *manifest.Lock, hidden ...string) *Trust {
	if l == nil {
		// No lock, no binaries: still the lock's path, toolbox's own
		// executables and the hidden directories.
		tr := TrustOf(lockPath, Guarded{Hidden: hidden})
		tr.SharedTmpSize = l.SharedTmpBytes()
		return tr
	}
	g := Guarded{ToolboxFile: l.File.Path, EnvdirRoot: l.EnvdirRoot, Hidden: hidden}
	for _, t := range l.Tools {
		if t != nil {
			g.Binaries = append(g.Binaries, t.Path)
		}
	}
	// A partial lock (manifest.ReadCall) still protects every binary.
	g.Binaries = append(g.Binaries, l.OtherPaths...)
	for _, s := range l.MCPServers {
		// What an MCP server runs: its executable and, for an
		// interpreter, the entry script it reads by path.
		if s != nil && len(s.Command) > 0 {
			g.Binaries = append(g.Binaries, s.Command[0])
		}
		if s != nil && s.Entry != nil {
			g.Binaries = append(g.Binaries, s.Entry.Path)
		}
	}
	// l.Tools and l.MCPServers are maps: sort the resolved paths.
	dir := filepath.Dir(lockPath)
	for i, b := range g.Binaries {
		if b != "" {
			g.Binaries[i] = resolve(dir, b)
		}
	}
	slices.Sort(g.Binaries)
	if l.Bwrap != nil {
		g.Bwrap = &sandbox.BwrapPin{Path: l.Bwrap.Path, SHA256: l.Bwrap.SHA256}
	}
	tr := TrustOf(lockPath, g)
	tr.SharedTmpSize = l.SharedTmpBytes()
	if l.Workspace != "" {
		tr.defaultWorkspace = resolve(dir, l.Workspace)
	}
	return tr
}

// TrustOf is the Trust of the lock at lockPath (absolute) guarding g: the
// one place the protected and hidden lists are made. Protected holds, in
// this order (the first one a grant covers is the one a refusal names),
// the lock, the toolbox file, the binaries, the pinned bubblewrap and
// SelfExecutables; Hidden the directories of g.Hidden, then the envdir
// root. It has no default workspace.
func TrustOf(lockPath string, g Guarded) *Trust {
	dir := filepath.Dir(lockPath)
	tr := &Trust{LockPath: lockPath, Protected: []string{lockPath}, Bwrap: g.Bwrap}
	if g.ToolboxFile != "" {
		tr.Protected = append(tr.Protected, resolve(dir, g.ToolboxFile))
	}
	seen := map[string]bool{}
	for _, b := range g.Binaries {
		if b == "" {
			continue
		}
		if b = resolve(dir, b); !seen[b] {
			seen[b] = true
			tr.Protected = append(tr.Protected, b)
		}
	}
	if g.Bwrap != nil {
		tr.Protected = append(tr.Protected, g.Bwrap.Path)
	}
	tr.Protected = append(tr.Protected, SelfExecutables()...)
	tr.Hidden = absPaths(g.Hidden)
	if g.EnvdirRoot != "" {
		// Hidden, not only read-only: every tool's secrets are there, and
		// the launcher, not the tool, reads a tool's own envdir.
		tr.Hidden = append(tr.Hidden, resolve(dir, g.EnvdirRoot))
	}
	return tr
}

// absPaths returns the paths that are not "", made absolute (those that
// cannot be are left out).
func absPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// selfNames are toolbox's executables: the landlock helper re-executes
// the running one, toolbox hands commands to toolbox-core beside it, and
// unconfined tools run below toolbox-reaper.
var selfNames = []string{"toolbox", "toolbox-core", "toolbox-reaper"}

// SelfExecutables are the running binary (os.Executable) and the toolbox
// binaries beside it, those that exist: no tool may replace them.
func SelfExecutables() []string {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	out := []string{self}
	for _, n := range selfNames {
		p := filepath.Join(filepath.Dir(self), n)
		if _, err := os.Stat(p); err == nil && p != self {
			out = append(out, p)
		}
	}
	return out
}
