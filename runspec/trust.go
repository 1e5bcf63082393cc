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
// NewTrust at run time; the compiler builds its own at lock time from the
// toolbox file. Prepare requires one for a tool locked with bwrap or
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

// NewTrust is the Trust of lock l at lockPath (absolute), its shared tmp
// of l's size (the default for a nil l): protected are
// the lock, the toolbox file, every locked binary (tools, plugins, the
// MCP servers' executables and entry scripts), the pinned bubblewrap and
// toolbox's own executables (SelfExecutables); hidden are the envdir root
// (every tool's and server's secrets) and the hidden directories that are
// not "" (the state dir the caller uses: its records, logs and socket).
func NewTrust(lockPath string, l *manifest.Lock, hidden ...string) *Trust {
	dir := filepath.Dir(lockPath)
	tr := &Trust{LockPath: lockPath, Protected: []string{lockPath}, SharedTmpSize: l.SharedTmpBytes()}
	defer func() {
		for _, h := range hidden {
			if h == "" {
				continue
			}
			if abs, err := filepath.Abs(h); err == nil {
				tr.Hidden = append(tr.Hidden, abs)
			}
		}
	}()
	if l == nil {
		return tr
	}
	tr.Protected = append(tr.Protected, resolve(dir, l.File.Path))
	if l.Workspace != "" {
		tr.defaultWorkspace = resolve(dir, l.Workspace)
	}
	if l.EnvdirRoot != "" {
		// Hidden, not only read-only: every tool's secrets are there, and
		// the launcher, not the tool, reads a tool's own envdir.
		hidden = append(slices.Clip(hidden), resolve(dir, l.EnvdirRoot))
	}
	var bins []string
	for _, t := range l.Tools {
		if t != nil && t.Path != "" {
			bins = append(bins, resolve(dir, t.Path))
		}
	}
	for _, p := range l.OtherPaths {
		// A partial lock (manifest.ReadCall) still protects every binary.
		bins = append(bins, resolve(dir, p))
	}
	for _, s := range l.MCPServers {
		// What an MCP server runs: its executable and, for an
		// interpreter, the entry script it reads by path.
		if s != nil && len(s.Command) > 0 {
			bins = append(bins, resolve(dir, s.Command[0]))
		}
		if s != nil && s.Entry != nil {
			bins = append(bins, resolve(dir, s.Entry.Path))
		}
	}
	slices.Sort(bins)
	tr.Protected = append(tr.Protected, slices.Compact(bins)...)
	if l.Bwrap != nil {
		tr.Bwrap = &sandbox.BwrapPin{Path: l.Bwrap.Path, SHA256: l.Bwrap.SHA256}
		tr.Protected = append(tr.Protected, l.Bwrap.Path)
	}
	tr.Protected = append(tr.Protected, SelfExecutables()...)
	return tr
}

// selfNames are toolbox's executables: the landlock helper re-executes
// the running one, and toolbox hands commands to toolbox-core beside it.
var selfNames = []string{"toolbox", "toolbox-core"}

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
