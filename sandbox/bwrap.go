package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// bwrapCmd builds the bwrap invocation for c. bwrap is the pinned binary
// (Spec.Bwrap), executed from the descriptor its hash was checked on. The
// options travel on a pipe (--args) and the declared paths, the shared
// tmp and c.Exe as descriptors opened without following symlinks
// (--ro-bind-fd/--bind-fd): neither shows in bwrap's command line, which
// is also what /proc/1/cmdline shows inside. Protected and hidden paths
// the grants would expose are masked (bwrapMasks). When info is true,
// bwrap writes the sandbox's pid 1 (as seen from the host) on an extra
// pipe, returned as infoR. With rlimits in lp, info is on and the sandbox
// waits for lp.blockW before it starts the tool (see releaseBwrap).
func bwrapCmd(s *Spec, c Command, info bool, lp *limitPlan) (cmd *exec.Cmd, infoR *os.File, closers []*os.File, err error) {
	if r := bwrapScopeRefusal(s); r != nil {
		return nil, nil, nil, r
	}
	lay, err := bwrapPlan(s, c)
	if err != nil {
		return nil, nil, nil, err
	}
	gs, sys, tmpAt, exeInside, dirInside := lay.gs, lay.sys, lay.tmpAt, lay.exeInside, lay.dirInside
	for _, g := range gs {
		closers = append(closers, g.f)
	}
	defer func() {
		if err != nil {
			closeAll(closers)
			closers = nil
			if lp.blockW != nil {
				lp.blockW.Close()
				lp.blockW = nil
			}
		}
	}()
	bw, err := openBwrap(s.Bwrap)
	if err != nil {
		return nil, nil, closers, err
	}
	closers = append(closers, bw.f)

	var args []string
	a := func(xs ...string) { args = append(args, xs...) }
	a("--unshare-all", "--unshare-user", "--disable-userns")
	if !s.NetNone {
		a("--share-net")
	}
	a("--die-with-parent", "--new-session", "--cap-drop", "ALL")
	a(bwrapTmpfs(s.Limits.TmpSize, "/")...)
	for _, e := range sys {
		switch {
		case e.link != "":
			a("--symlink", e.link, e.path)
		default:
			a("--ro-bind", e.src, e.path)
		}
	}
	a("--proc", "/proc", "--dev", "/dev")
	a(bwrapProcCovers...)
	a(bwrapDevShm(s.Limits.TmpSize)...)
	if tmpAt != "/tmp" {
		a(bwrapTmpfs(s.Limits.TmpSize, "/tmp")...)
	}
	// ExtraFiles[0] is fd 3 (the --args pipe); bind descriptors follow.
	var extra []*os.File
	bindFD := func(opt string, f *os.File, dest string) {
		a(opt, strconv.Itoa(3+1+len(extra)), dest)
		extra = append(extra, f)
	}
	bindGrant := func(g grant) {
		opt := "--ro-bind-fd"
		if g.write {
			opt = "--bind-fd"
		}
		bindFD(opt, g.f, g.dest)
	}
	// The shared tmp moved to its own path (relocateSharedTmp) lies in a
	// hidden shared tmp root when another grant covers that root
	// (TMPDIR inside a workspace): it is mounted in the empty tmpfs that
	// hides the root, before that tmpfs becomes read-only.
	inHidden := func(g grant) int {
		for i, m := range lay.masks {
			if g.field == FieldTmp && m.kind == maskHidden && within(g.dest, m.inside) {
				return i
			}
		}
		return -1
	}
	for _, g := range gs {
		if inHidden(g) < 0 {
			bindGrant(g)
		}
	}
	for i, m := range lay.masks {
		if m.kind == maskHidden {
			a("--tmpfs", m.inside)
			for _, g := range gs {
				if inHidden(g) == i {
					bindGrant(g)
				}
			}
			a("--remount-ro", m.inside)
			continue
		}
		f, err := helper.OpenNoFollow(m.src)
		if err != nil {
			return nil, nil, closers, refuse(FieldSandbox, Bwrap, "check that nothing replaces the path while toolbox starts the tool",
				"opening protected path %q: %v", m.src, err)
		}
		closers = append(closers, f)
		opt := "--ro-bind-fd"
		if m.kind == maskPin {
			opt = "--bind-fd"
		}
		bindFD(opt, f, m.inside)
	}
	if c.Exe != nil {
		// What runs is the checked file, whatever the path names now.
		// bwrap 0.8 cannot bind a file that was unlinked (it resolves the
		// descriptor's link text): a swap is refused here, and one after
		// this check makes bwrap fail; neither runs the swapped file.
		if err := c.Exe.sameFile(c.Exe.real); err != nil {
			return nil, nil, closers, err
		}
		bindFD("--ro-bind-fd", c.Exe.f, exeInside)
	}
	// Every mount is in place: the root tmpfs becomes read-only, so a
	// write outside the declared paths fails (EROFS) instead of landing
	// in a throwaway root. /tmp, /dev, /proc and the grants are mounts
	// of their own and keep their modes.
	a("--remount-ro", "/")
	seccompR, err := bwrapSeccompPipe(s)
	if err != nil {
		return nil, nil, closers, err
	}
	closers = append(closers, seccompR)
	a("--seccomp", strconv.Itoa(3+1+len(extra)))
	extra = append(extra, seccompR)
	if info || len(lp.rlimits) > 0 {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, closers, fmt.Errorf("creating bwrap info pipe: %w", err)
		}
		closers = append(closers, w)
		a("--info-fd", strconv.Itoa(3+1+len(extra)))
		extra = append(extra, w)
		infoR = r
	}
	if len(lp.rlimits) > 0 {
		r, w, err := os.Pipe()
		if err != nil {
			infoR.Close()
			return nil, nil, closers, fmt.Errorf("creating bwrap block pipe: %w", err)
		}
		closers = append(closers, r)
		a("--block-fd", strconv.Itoa(3+1+len(extra)))
		extra = append(extra, r)
		lp.blockW = w
	}
	a("--chdir", dirInside)

	var buf bytes.Buffer
	for _, x := range args {
		buf.WriteString(x)
		buf.WriteByte(0)
	}
	argsR, err := helper.FeedPipe(buf.Bytes())
	if err != nil {
		if infoR != nil {
			infoR.Close()
		}
		return nil, nil, closers, fmt.Errorf("passing bwrap options: %w", err)
	}
	closers = append(closers, argsR)
	files := append([]*os.File{argsR}, extra...)
	dup, path, err := execFD(bw.f, 3+len(files))
	if err != nil {
		if infoR != nil {
			infoR.Close()
		}
		return nil, nil, closers, err
	}
	closers = append(closers, dup)

	// bwrap is pid 1 inside: its environment is visible there, so it gets
	// only the tool's (never nil, which would hand it toolbox's own).
	env := withTmpdir(c.Env, tmpAt)
	cmd = &exec.Cmd{
		Path:       path,
		Args:       append([]string{"bwrap", "--args", "3", "--", exeInside}, c.Args...),
		Env:        env,
		Dir:        "/",
		ExtraFiles: files,
	}
	return cmd, infoR, closers, nil
}

// bwrapLayout is what bwrap mounts for one start: the grants in mount
// order, each opened (the caller closes them: closeGrants), the system
// entries, where the shared tmp is mounted ("" without one), where the
// executable and the working directory are inside, and the masks of the
// guarded paths (gp) the grants would expose.
type bwrapLayout struct {
	gs                   []grant
	sys                  []sysEntry
	tmpAt                string
	exeInside, dirInside string
	gp                   []guarded
	masks                []mask
}

// bwrapPlan lays out the sandbox of c under s (bwrapCmd and Explain): it
// resolves and opens the grants, refuses what no mask can make safe
// (guardRefusal), places the grants and the shared tmp, checks that the
// executable and the working directory are inside, and lists the masks.
// On error nothing stays open.
func bwrapPlan(s *Spec, c Command) (*bwrapLayout, error) {
	gs, err := s.grants(c.Exe)
	if err != nil {
		return nil, err
	}
	lay := &bwrapLayout{gp: s.guardedPaths()}
	if err := s.missingHiddenRefusal(Bwrap, gs); err != nil {
		closeGrants(gs)
		return nil, err
	}
	if err := guardRefusal(Bwrap, gs, lay.gp); err != nil {
		closeGrants(gs)
		return nil, err
	}
	lay.sys = systemEntries(!s.NetNone)
	lay.tmpAt = relocateSharedTmp(gs)
	lay.gs = placeGrants(gs, lay.sys)
	if _, lay.exeInside, _, lay.dirInside, err = s.toolPaths(c, lay.gs, lay.sys); err != nil {
		closeGrants(gs)
		return nil, err
	}
	lay.masks = bwrapMasks(lay.gs, lay.sys, lay.gp)
	return lay, nil
}

// relocateSharedTmp decides where bwrap mounts the shared tmp grant and
// returns that place ("" without one). It is /tmp, unless another grant
// lies under /tmp (a tool kept there, a plugin's socket directory): bwrap
// would then create that grant's mount point inside the shared directory,
// following whatever symlink another tool planted there. Such a tool gets
// a fresh /tmp instead and the shared directory at its own path, named by
// $TMPDIR as under landlock.
func relocateSharedTmp(gs []grant) string {
	tmp := -1
	under := false
	for i, g := range gs {
		switch {
		case g.field == FieldTmp:
			tmp = i
		case within(g.dest, "/tmp"):
			under = true
		}
	}
	if tmp < 0 {
		return ""
	}
	if under {
		gs[tmp].dest = gs[tmp].src
		sortGrants(gs)
		for _, g := range gs {
			if g.field == FieldTmp {
				return g.dest
			}
		}
	}
	return gs[tmp].dest
}

const fixBwrap = `install bubblewrap (e.g. apt-get install bubblewrap), or set sandbox = "landlock" or "auto" in the toolbox file`

// readBwrapInfo reads the JSON bwrap writes on --info-fd and returns the
// host pid of the sandbox's pid 1, or 0 when bwrap wrote none.
func readBwrapInfo(r *os.File) int {
	defer r.Close()
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0
	}
	return info.ChildPid
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// bwrapProcCovers make the kernel's settings under the tool's /proc
// read-only. The tool's uid 0 is the host's (bwrap maps 0 to 0 when toolbox
// is root), and writing a sysctl takes no capability, only that uid: a
// tool could set vm.*, kernel.core_pattern (a program the kernel runs as
// root) or the host's net.* under net host. bwrap 0.8 covers /proc/sys only
// when access(W_OK) on the directory succeeds, which the kernel never
// grants, so toolbox binds them itself, from the host's /proc (what a sysctl
// shows still follows the reader's namespaces, not the mount).
// /proc/sysrq-trigger (reboot, crash) and /proc/pressure (PSI triggers)
// may be absent from a kernel.
var bwrapProcCovers = []string{
	"--ro-bind", "/proc/sys", "/proc/sys",
	"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
	"--ro-bind-try", "/proc/pressure", "/proc/pressure",
}
