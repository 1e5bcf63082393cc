package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/toolbox-dev/toolbox/internal/shq"
)

// guarded is a protected or hidden path, resolved on the host.
type guarded struct {
	path string
	dir  bool
	hide bool // Spec.Hidden: out of reach, not only read-only
	// tmpRoot: a directory holding toolboxes' shared tmp directories
	// (<tmp>/toolbox-<uid>, sharedTmpRoots): hidden; the tool's own
	// shared tmp inside it is granted whole (FieldTmp) all the same.
	tmpRoot bool
}

// selfExecutable is toolbox's own binary, which the landlock helper
// re-executes: always protected.
var selfExecutable = sync.OnceValue(func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
})

// guardedPaths resolves Protected (plus toolbox's own executable),
// Hidden and the shared tmp roots (sharedTmpRoots, hidden); paths that do
// not exist are skipped. A path in both is hidden.
func (s *Spec) guardedPaths() []guarded {
	seen := map[string]int{}
	var out []guarded
	add := func(p string, hide bool) int {
		if !filepath.IsAbs(p) {
			return -1
		}
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			return -1
		}
		st, err := os.Stat(r)
		if err != nil {
			return -1
		}
		if i, ok := seen[r]; ok {
			out[i].hide = out[i].hide || hide
			return i
		}
		seen[r] = len(out)
		out = append(out, guarded{path: r, dir: st.IsDir(), hide: hide})
		return len(out) - 1
	}
	for _, p := range s.Hidden {
		add(p, true)
	}
	for _, p := range s.Protected {
		add(p, false)
	}
	if self := selfExecutable(); self != "" {
		add(self, false)
	}
	// Last, so that a refusal names the toolbox's own files first.
	for _, p := range s.sharedTmpRoots() {
		if i := add(p, true); i >= 0 && out[i].path == filepath.Clean(p) {
			out[i].tmpRoot = true
		}
	}
	return out
}

// sharedTmpRoots are the directories that hold toolboxes' shared tmp
// directories and that a grant could reach: <TMPDIR>/toolbox-<uid> for
// toolbox's effective uid (SharedTmpPath) and the parent of the tool's own
// shared tmp. Nothing in them is a tool's but its own shared tmp, given
// whole: the others are other toolboxes' scratch files and directories
// toolbox trusts at every start (DESIGN.md §6). The host's
// /tmp/toolbox-<uid> needs no entry: no grant may cover /tmp
// (coversHostTmp) or lie inside a root (inSharedTmpRoot).
//
// The first is created when missing (as SharedTmpDir would), so that a tool
// granted the directory above it cannot take the name first and hand
// later toolboxes a root of its making.
func (s *Spec) sharedTmpRoots() []string {
	base, name := tempDir(), "toolbox-"+strconv.Itoa(os.Geteuid())
	_ = ensureDir(base, name, sharedTmpParentMode) // a failure: the root is refused at SharedTmpDir, or hidden as whatever it is
	out := []string{filepath.Join(base, name)}
	if s.SharedTmp != "" {
		if p := filepath.Dir(filepath.Clean(s.SharedTmp)); p != out[0] {
			out = append(out, p)
		}
	}
	return out
}

const (
	// fixTmpRoot is the fix when a grant covers a shared tmp root.
	fixTmpRoot   = "run toolbox with TMPDIR outside every path a tool is granted (toolbox keeps every toolbox's shared tmp in $TMPDIR/toolbox-<uid>), or declare narrower paths"
	fixProtected = "declare narrower writable paths that leave out the toolbox file, the lock, the envdir root and every locked binary (or their directories)"
	fixHidden    = "declare paths that leave out toolbox's state directory and the envdir root"
)

// guardRefusal refuses what no mechanism can make safe, and under landlock
// what it cannot mask: a writable grant (or any grant of a hidden path)
// that is or lies inside a guarded path; under landlock also one that
// covers a guarded path. The refusal names the grant's field, the grant
// and the guarded path.
func guardRefusal(m Mechanism, gs []grant, gp []guarded) error {
	why := func(p guarded) (what, fix string) {
		if p.tmpRoot {
			return "it holds the shared tmp of every toolbox run by that user (other toolboxes' scratch files, directories toolbox trusts at every start)", fixTmpRoot
		}
		if p.hide {
			return "no tool may reach it (toolbox's state directory, the envdir root with every tool's secrets, serve's MCP token file)", fixHidden
		}
		return "a later run trusts it", fixProtected
	}
	for _, g := range gs {
		for _, p := range gp {
			if p.tmpRoot && g.field == FieldTmp {
				continue // the tool's own shared tmp, given whole
			}
			if (g.write || p.hide) && within(g.src, p.path) {
				what, fix := why(p)
				return refuse(g.field, m, fix, "path %q (%s) lies inside %q: %s", g.dest, g.src, p.path, what)
			}
		}
	}
	if m != Landlock {
		// bwrap masks a protected file through its directory
		// (bwrapMasks), which cannot be the writable grant itself.
		for _, g := range gs {
			for _, p := range gp {
				if p.dir || filepath.Dir(p.path) != g.src {
					continue
				}
				if p.hide {
					return refuse(g.field, m, "declare paths that leave out that file, or move it into a directory of its own",
						"path %q (%s) directly holds %q, which no tool may reach (a secret of toolbox's), and bwrap hides a file only by covering its directory", g.dest, g.src, p.path)
				}
				if g.write {
					return refuse(g.field, m, fixProtected+"; or keep the toolbox file and its lock in a directory of their own inside it, such as .toolbox/",
						"writable path %q (%s) directly holds %q: a later run trusts it, and a read-only mount on a file is dropped when the host replaces it by rename", g.dest, g.src, p.path)
				}
			}
		}
		return nil
	}
	for _, g := range gs {
		for _, p := range gp {
			if (g.write || p.hide) && within(p.path, g.src) {
				what, fix := why(p)
				kind := "writable path"
				if !g.write {
					kind = "path"
				}
				return refuse(g.field, m, fix+`, or use sandbox = "bwrap", which masks such paths`,
					"%s %q (%s) covers %q: %s, and landlock cannot mask it", kind, g.dest, g.src, p.path, what)
			}
		}
	}
	return nil
}

// missingHiddenRefusal refuses a writable grant that covers a hidden path
// (Spec.Hidden: the envdir root, the state dir) that does not exist yet:
// guardedPaths skips it, so no mechanism hides it, and the tool could
// create it, with links to host files that toolbox, not the tool, then
// reads (as the envdir, as root, following links) at every later run. The
// fix is to create it; once it exists it is hidden as usual.
func (s *Spec) missingHiddenRefusal(m Mechanism, gs []grant) error {
	for _, h := range s.Hidden {
		if !filepath.IsAbs(h) {
			continue
		}
		if _, err := os.Lstat(h); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		p := resolveMissing(filepath.Clean(h))
		for _, g := range gs {
			if g.write && g.field != FieldTmp && within(p, g.src) {
				return refuse(g.field, m, fmt.Sprintf("create it before the tools run (mkdir -p -m 700 %s), or declare writable paths that leave it out", shq.Quote(h)),
					"writable path %q (%s) covers %q, which does not exist: no tool may reach it (toolbox's state directory, the envdir root), and a tool could create it with links to host files that toolbox reads at every later run", g.dest, g.src, h)
			}
		}
	}
	return nil
}

// resolveMissing is p, which does not exist, with the links of its nearest
// existing ancestor resolved.
func resolveMissing(p string) string {
	rest := ""
	for d := p; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(d) == d {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// mask is one extra bwrap mount that keeps a guarded path out of reach.
type mask struct {
	inside string // where the tool would see the path
	src    string // the host path
	kind   maskKind
}

type maskKind int

const (
	maskPin    maskKind = iota // bind a directory onto itself, writable: it becomes a mount point, which cannot be renamed or removed
	maskRO                     // bind read-only on top: writes fail with EROFS; rename, unlink and link with EBUSY or EXDEV
	maskHidden                 // an empty read-only tmpfs on top
)

// bwrapMasks lists, in mount order, the mounts that protect every guarded
// path the tool could otherwise change (or, for hidden ones, reach)
// through a grant: guarded paths re-bound read-only (hidden ones covered
// by an empty read-only tmpfs) where the tool sees them, after the
// directories between the writable grant and the path are pinned as
// mount points so that the tool cannot rename a parent away and put a
// forged copy in its place. mounts are the grants and system entries as
// bwrap mounts them, to find which mount the tool sees at a path.
func bwrapMasks(gs []grant, sys []sysEntry, gp []guarded) []mask {
	var pins, masks []mask
	seen := map[string]bool{}
	for _, p := range gp {
		for i, g := range gs {
			if !(g.write || p.hide) || p.path == g.src || !within(p.path, g.src) {
				continue
			}
			target := p.path
			if !p.dir {
				// A mount on a file lasts only as long as its dentry: when
				// the host replaces the file by rename (toolbox lock, an
				// install, an editor), the kernel drops the mount in every
				// running sandbox and the new file is writable (or, hidden,
				// readable). The file's directory stays: mask that
				// (guardRefusal refuses the case where it is the grant
				// itself). A tmpfs cannot cover a file either.
				target = filepath.Dir(p.path)
			}
			rel, _ := filepath.Rel(g.src, target)
			inside := filepath.Join(g.dest, rel)
			if visibleMount(inside, gs, sys) != i {
				continue // a deeper mount shows something else there
			}
			kind := maskRO
			if p.hide {
				kind = maskHidden
			}
			if !seen[inside] {
				seen[inside] = true
				masks = append(masks, mask{inside: inside, src: target, kind: kind})
			}
			if !g.write {
				continue
			}
			for d := filepath.Dir(inside); d != g.dest && within(d, g.dest); d = filepath.Dir(d) {
				if !seen[d] {
					seen[d] = true
					r, _ := filepath.Rel(g.dest, d)
					pins = append(pins, mask{inside: d, src: filepath.Join(g.src, r), kind: maskPin})
				}
			}
		}
	}
	byDepth := func(a, b mask) int {
		if da, db := strings.Count(a.inside, "/"), strings.Count(b.inside, "/"); da != db {
			return da - db
		}
		return strings.Compare(a.inside, b.inside)
	}
	slices.SortFunc(pins, byDepth)
	slices.SortFunc(masks, byDepth)
	// A path inside one already masked read-only or hidden needs nothing.
	var kept []mask
	for _, m := range masks {
		if !slices.ContainsFunc(kept, func(k mask) bool { return k.inside != m.inside && within(m.inside, k.inside) }) {
			kept = append(kept, m)
		}
	}
	return append(pins, kept...)
}

// visibleMount is the index of the grant whose mount the tool sees at
// inside (the deepest grant destination above it), or -1 when a system
// entry or nothing is there.
func visibleMount(inside string, gs []grant, sys []sysEntry) int {
	best, depth := -1, -1
	for i, g := range gs {
		if within(inside, g.dest) && len(g.dest) > depth {
			best, depth = i, len(g.dest)
		}
	}
	for _, e := range sys {
		if e.link == "" && within(inside, e.path) && len(e.path) > depth {
			return -1
		}
	}
	return best
}
