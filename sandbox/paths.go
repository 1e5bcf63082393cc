package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// systemDirs are bound read-only (or recreated as symlinks on usrmerge
// systems) so that ordinary programs can be executed. Missing ones are
// skipped.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcEntries are the parts of /etc that ordinary programs read: user and
// group names, the dynamic loader's cache, certificates, time zone, name
// service configuration. The rest of /etc (shadow, ssh keys, credentials of
// services) stays out; a tool that needs more declares it in fs.read.
var etcEntries = []string{
	"passwd", "group", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"ssl", "ca-certificates", "ca-certificates.conf", "pki", "crypto-policies",
	"alternatives", "localtime", "timezone", "os-release",
	"hosts", "host.conf", "gai.conf", "services", "protocols", "mime.types",
}

// etcNetEntries are added with net: host only.
var etcNetEntries = []string{"resolv.conf"}

// readableDevices and writableDevices are granted under landlock (bwrap's
// --dev provides the same set).
var (
	readableDevices = []string{"/dev/random", "/dev/urandom"}
	writableDevices = []string{"/dev/null", "/dev/zero", "/dev/full"}
)

// sysEntry is one system path exposed read-only.
type sysEntry struct {
	path string // where the tool sees it
	src  string // path with every symlink resolved
	link string // when path itself is a symlink to a place already exposed: its target, recreated as is
	dir  bool
}

// scanSystemEntries lists the system paths that exist here, in mount
// order. A path that is no symlink under a real parent is taken from one
// lstat; only links are resolved. systemEntries caches its answer.
func scanSystemEntries(netHost bool) []sysEntry {
	var out []sysEntry
	add := func(p string, parentReal bool) {
		fi, err := os.Lstat(p)
		if err != nil {
			return
		}
		if parentReal && fi.Mode()&fs.ModeSymlink == 0 {
			out = append(out, sysEntry{path: p, src: p, dir: fi.IsDir()})
			return
		}
		src, err := filepath.EvalSymlinks(p)
		if err != nil {
			return // a dangling link: nothing to expose
		}
		st, err := os.Stat(src)
		if err != nil {
			return
		}
		e := sysEntry{path: p, src: src, dir: st.IsDir()}
		if fi.Mode()&fs.ModeSymlink != 0 && underAny(src, out) {
			e.link, _ = os.Readlink(p)
		}
		out = append(out, e)
	}
	for _, d := range systemDirs {
		add(d, true)
	}
	etcReal := false
	if src, err := filepath.EvalSymlinks("/etc"); err == nil && src == "/etc" {
		etcReal = true
	}
	names := etcEntries
	if netHost {
		names = append(slices.Clone(names), etcNetEntries...)
	}
	for _, n := range names {
		add("/etc/"+n, etcReal)
	}
	return out
}

// underAny reports whether p lies in the source of a real (non-link) entry.
func underAny(p string, es []sysEntry) bool {
	for _, e := range es {
		if e.link == "" && e.dir && within(p, e.src) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or lies below it (both clean, absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// grant is one path the tool may use besides the system paths.
type grant struct {
	dest  string // the path the tool uses (declared, cleaned)
	src   string // dest with every symlink resolved, on the host
	write bool
	dir   bool
	field string   // the declaration it comes from, for refusals
	f     *os.File // src opened (O_PATH) without following symlinks: what is bound or granted
}

// closeGrants closes the descriptors grants opened.
func closeGrants(gs []grant) {
	for _, g := range gs {
		if g.f != nil {
			g.f.Close()
		}
	}
}

const fixRelock = "run toolbox lock, after removing whatever replaced the path"

// grants resolves the tool directory, the declared paths and (with tmp:
// shared) the shared scratch directory into grants sorted so that a parent
// is mounted before what lies below it, each opened once, without
// following any symlink, by the descriptor that is then bound (bwrap) or
// granted (landlock): nothing resolved here can be redirected later.
//
// A declared path is resolved as the lock recorded (Spec.Resolved) when it
// did, else now. The tool's directory is the one holding exe when exe is
// given, so it cannot be swapped apart from the checked binary. Refused: a
// path that is not absolute or does not exist, one whose lock-time
// resolution now goes through a symlink, one that covers the host's /tmp
// (decision D1), and one that reaches outside the granted paths through a
// symlink inside a writable path (the tool could have planted it on an
// earlier run). The caller closes the grants (closeGrants).
func (s *Spec) grants(exe *Executable) (out []grant, err error) {
	byDest := map[string]*grant{}
	var order []string
	defer func() {
		if err != nil {
			for _, g := range byDest {
				if g.f != nil {
					g.f.Close()
				}
			}
			out = nil
		}
	}()
	add := func(p string, write bool, field, src string) error {
		if !filepath.IsAbs(p) {
			return refuse(field, s.Mechanism, "declare absolute paths (relative ones are resolved against the tool's directory)",
				"path %q is not absolute", p)
		}
		dest := filepath.Clean(p)
		if g, ok := byDest[dest]; ok {
			if write && !g.write { // read and write of one path: write wins
				g.write, g.field = true, field
			}
			return nil
		}
		locked := false
		if src == "" {
			src, locked = s.Resolved[dest]
		}
		if !locked && src == "" {
			var err error
			if src, err = filepath.EvalSymlinks(dest); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return refuse(field, s.Mechanism, "create the path, or remove it from the declaration",
						"path %q does not exist", dest)
				}
				return refuse(field, s.Mechanism, "make the path accessible to toolbox", "resolving path %q: %v", dest, err)
			}
		}
		if field != FieldPath && coversHostTmp(src) {
			return refuse(field, s.Mechanism, `declare a directory below it, or use the toolbox's shared tmp (tmp = "shared": /tmp under bwrap, $TMPDIR under landlock)`,
				"path %q covers the host's /tmp, which no tool is given", dest)
		}
		if field != FieldPath && s.SharedTmp != "" && within(src, s.SharedTmp) {
			return refuse(field, s.Mechanism, "declare nothing inside it: the shared tmp is given whole (tmp = \"shared\")",
				"path %q lies inside the toolbox's shared tmp %q", dest, s.SharedTmp)
		}
		if root := inSharedTmpRoot(src); field != FieldPath && root != "" {
			return refuse(field, s.Mechanism, `declare a directory of the tool's own; a tool gets its toolbox's shared tmp with tmp = "shared"`,
				"path %q is or lies inside %q, which holds the shared tmp of every toolbox run by that user: other toolboxes' scratch files, and directories toolbox trusts at every start", dest, root)
		}
		f, err := helper.OpenNoFollow(src)
		if err != nil {
			if locked {
				return refuse(field, s.Mechanism, fixRelock, "path %q, %q at lock time, changed since the lock: %v", dest, src, unwrapErrno(err))
			}
			return refuse(field, s.Mechanism, "check that nothing replaces the path while toolbox starts the tool", "opening %q: %v", src, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			f.Close()
			return refuse(field, s.Mechanism, "make the path accessible to toolbox", "path %q: %v", dest, err)
		}
		byDest[dest] = &grant{dest: dest, src: src, write: write, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, field: field, f: f}
		order = append(order, dest)
		return nil
	}
	if s.ToolDir != "" {
		src := ""
		if exe != nil && filepath.Dir(exe.path) == filepath.Clean(s.ToolDir) {
			src = filepath.Dir(exe.real)
		}
		if err := add(s.ToolDir, false, FieldPath, src); err != nil {
			return nil, err
		}
	}
	for _, p := range s.Read {
		if err := add(p, false, FieldRead, ""); err != nil {
			return nil, err
		}
	}
	for _, p := range s.Write {
		if err := add(p, true, FieldWrite, ""); err != nil {
			return nil, err
		}
	}
	if tmp, err := s.sharedTmpGrant(); err != nil {
		return nil, err
	} else if tmp != nil {
		byDest[tmp.dest] = tmp
		order = append(order, tmp.dest)
	}
	out = make([]grant, 0, len(order))
	for _, d := range order {
		out = append(out, *byDest[d])
	}
	sortGrants(out)
	for _, g := range out {
		if err := checkPlantedLink(g, out, s.Mechanism); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sharedTmpGrant is the shared scratch directory as a writable grant:
// mounted at /tmp under bwrap, granted at its own path under landlock.
// nil without one (tmp: private, or no SharedTmp: the tool then gets a
// fresh empty /tmp under bwrap and none under landlock).
func (s *Spec) sharedTmpGrant() (*grant, error) {
	if s.TmpPrivate || s.SharedTmp == "" {
		return nil, nil
	}
	f, err := openSharedTmp(s.SharedTmp, s.SharedTmpSize)
	if err != nil {
		var r *RefusalError
		if errors.As(err, &r) {
			r.Mechanism = s.Mechanism
		}
		return nil, err
	}
	dest := s.SharedTmp
	if s.Mechanism == Bwrap {
		dest = "/tmp"
	}
	return &grant{dest: dest, src: s.SharedTmp, write: true, dir: true, field: FieldTmp, f: f}, nil
}

// coversHostTmp reports whether the resolved path p is the host's /tmp
// or one of its parents. ($TMPDIR is the operator's choice: it may well
// be a directory a tool is meant to see.)
func coversHostTmp(p string) bool {
	return within(hostTmp(), p)
}

// inSharedTmpRoot returns the directory that holds toolboxes' shared tmp
// directories (<tmp>/toolbox-<uid>, for the host's /tmp and toolbox's
// os.TempDir, any uid) that p is equal to or inside, or "". A grant there
// would hand a tool the scratch files of every other toolbox of that
// user, and the power to replace their directories (or, above one, to
// take the name before toolbox creates it); under bwrap, mount points
// made in it for the shared tmp. Only a toolbox's own, given whole, is
// a tool's (tmp = "shared").
func inSharedTmpRoot(p string) string {
	for _, base := range []string{hostTmp(), tempDir()} {
		if !within(p, base) || p == base {
			continue
		}
		rel, _ := filepath.Rel(base, p)
		first, _, _ := strings.Cut(rel, "/")
		if uid, ok := strings.CutPrefix(first, "toolbox-"); ok && uid != "" && strings.Trim(uid, "0123456789") == "" {
			return filepath.Join(base, first)
		}
	}
	return ""
}

// tempDir is os.TempDir with its links resolved, as SharedTmpPath takes it.
func tempDir() string {
	if t, err := filepath.EvalSymlinks(os.TempDir()); err == nil {
		return t
	}
	return filepath.Clean(os.TempDir())
}

var hostTmp = sync.OnceValue(func() string {
	if t, err := filepath.EvalSymlinks("/tmp"); err == nil {
		return t
	}
	return "/tmp"
})

// checkPlantedLink refuses g when its path goes through a symlink that lies
// inside a writable grant and points outside every grant that would give
// the same access anyway.
func checkPlantedLink(g grant, all []grant, m Mechanism) error {
	for _, w := range all {
		if !w.write || w.field == FieldTmp || w.dest == g.dest || !within(g.dest, w.dest) {
			continue
		}
		rel, _ := filepath.Rel(w.dest, g.dest)
		if g.src == filepath.Join(w.src, rel) {
			continue // no link below w
		}
		for _, h := range all {
			if h.dest != g.dest && within(g.src, h.src) && (h.write || !g.write) {
				return nil // the target is granted anyway
			}
		}
		return refuse(g.field, m, "replace the symlink by a real directory or declare the path it points to",
			"path %q goes through a symlink inside writable path %q to %q, outside the granted paths", g.dest, w.dest, g.src)
	}
	return nil
}

// placeGrants decides where bwrap mounts each grant. A declared path that
// lies inside another mounted tree (a grant or a system directory) but
// reaches its target through a symlink in that tree cannot be a mount
// point (bwrap would follow the link while the new root is half built), so
// such a grant is mounted at its resolved path, where the link inside the
// sandbox leads as well when it is absolute. The result is in mount order.
func placeGrants(gs []grant, sys []sysEntry) []grant {
	out := slices.Clone(gs)
	for i, g := range out {
		best, expected := -1, g.dest
		for _, h := range gs {
			if h.dest != g.dest && within(g.dest, h.dest) && len(h.dest) > best {
				rel, _ := filepath.Rel(h.dest, g.dest)
				best, expected = len(h.dest), filepath.Join(h.src, rel)
			}
		}
		for _, e := range sys {
			if e.link == "" && e.dir && within(g.dest, e.path) && len(e.path) > best {
				rel, _ := filepath.Rel(e.path, g.dest)
				best, expected = len(e.path), filepath.Join(e.src, rel)
			}
		}
		if best >= 0 && g.src != expected {
			out[i].dest = g.src
		}
	}
	sortGrants(out)
	return out
}

func sortGrants(gs []grant) {
	slices.SortStableFunc(gs, func(a, b grant) int {
		if da, db := strings.Count(a.dest, "/"), strings.Count(b.dest, "/"); da != db {
			return da - db
		}
		return strings.Compare(a.dest, b.dest)
	})
}

// sandboxPath maps a host path to the path the tool uses for it: the path
// is resolved, then found in the grant with the longest source (or in a
// system entry). ok is false when the tool cannot see the path.
func sandboxPath(hostPath string, gs []grant, sys []sysEntry) (resolved, inside string, ok bool) {
	src, err := filepath.EvalSymlinks(hostPath)
	if err != nil {
		return "", "", false
	}
	return resolvedInside(src, gs, sys)
}

// resolvedInside is sandboxPath for a path already resolved.
func resolvedInside(src string, gs []grant, sys []sysEntry) (resolved, inside string, ok bool) {
	best := -1
	for i, g := range gs {
		if within(src, g.src) && (best < 0 || len(g.src) > len(gs[best].src)) {
			best = i
		}
	}
	if best >= 0 {
		rel, _ := filepath.Rel(gs[best].src, src)
		return src, filepath.Join(gs[best].dest, rel), true
	}
	for _, e := range sys {
		if e.link == "" && within(src, e.src) && e.src == e.path {
			return src, src, true
		}
	}
	return "", "", false
}

// toolPaths checks that the executable and the working directory are
// inside the tool's sandbox and returns them resolved (for landlock) and as
// the tool sees them (for bwrap). dir "" means the tool's directory, or /.
// With c.Exe the executable is where its checked descriptor lives.
func (s *Spec) toolPaths(c Command, gs []grant, sys []sysEntry) (exe, exeInside, dir, dirInside string, err error) {
	if !filepath.IsAbs(c.Path) {
		return "", "", "", "", fmt.Errorf("%w: tool path %q is not absolute", ErrStartFailed, c.Path)
	}
	ok := false
	if c.Exe != nil {
		exe, exeInside, ok = resolvedInside(c.Exe.real, gs, sys)
	} else {
		if err := checkExecutable(c.Path); err != nil {
			return "", "", "", "", err
		}
		exe, exeInside, ok = sandboxPath(c.Path, gs, sys)
	}
	if !ok {
		return "", "", "", "", refuse(FieldPath, s.Mechanism, "move the tool into its directory or declare its location in fs.read",
			"executable %q is outside the tool's sandbox", c.Path)
	}
	d := c.Dir
	if d == "" {
		d = s.ToolDir
	}
	if d == "" {
		return exe, exeInside, "/", "/", nil
	}
	dir, dirInside, ok = sandboxPath(d, gs, sys)
	if !ok {
		return "", "", "", "", refuse(FieldRundir, s.Mechanism, "use a working directory inside a declared path",
			"working directory %q is outside the tool's sandbox", d)
	}
	return exe, exeInside, dir, dirInside, nil
}

// checkExecutable returns the error exec would: not found or not executable.
func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStartFailed, &fs.PathError{Op: "exec", Path: p, Err: unwrapErrno(err)})
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: %w", ErrStartFailed, &fs.PathError{Op: "exec", Path: p, Err: syscall.EACCES})
	}
	return nil
}

func unwrapErrno(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
