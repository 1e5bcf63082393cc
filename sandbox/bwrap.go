package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

var bwrapLookup = sync.OnceValues(func() (string, error) { return exec.LookPath("bwrap") })

// bwrapPath is bubblewrap's path, looked up once per process.
func bwrapPath() (string, error) {
	p, err := bwrapLookup()
	if err != nil {
		return "", fmt.Errorf("finding bwrap: %w", err)
	}
	return p, nil
}

// bwrapCmd builds the bwrap invocation for c. The options travel on a pipe
// (--args) and the declared paths as descriptors opened without following
// symlinks (--ro-bind-fd/--bind-fd): neither shows in bwrap's command line,
// which is also what /proc/1/cmdline shows inside. When info is true, bwrap
// writes the sandbox's pid 1 (as seen from the host) on an extra pipe,
// returned as infoR. With rlimits in lp, info is on and the sandbox waits
// for lp.blockW before it starts the tool (see releaseBwrap).
func bwrapCmd(s *Spec, c Command, info bool, lp *limitPlan) (cmd *exec.Cmd, infoR *os.File, closers []*os.File, err error) {
	path, err := bwrapPath()
	if err != nil {
		return nil, nil, nil, refuse(FieldSandbox, Bwrap, fixBwrap, "%v", err)
	}
	if r := bwrapScopeRefusal(s); r != nil {
		return nil, nil, nil, r
	}
	gs, err := s.grants()
	if err != nil {
		return nil, nil, nil, err
	}
	sys := systemEntries(!s.NetNone)
	gs = placeGrants(gs, sys)
	_, exeInside, _, dirInside, err := s.toolPaths(c, gs, sys)
	if err != nil {
		return nil, nil, nil, err
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
	a(bwrapDevShm(s.Limits.TmpSize)...)
	if s.TmpPrivate {
		a(bwrapTmpfs(s.Limits.TmpSize, "/tmp")...)
	}
	// ExtraFiles[0] is fd 3 (the --args pipe); bind descriptors follow.
	var extra []*os.File
	nextFD := func() string { return strconv.Itoa(3 + 1 + len(extra)) }
	for _, g := range gs {
		f, err := openNoFollow(g.src)
		if err != nil {
			return nil, nil, closers, refuse(g.field, Bwrap, "check that nothing replaces the path while toolbox starts the tool",
				"opening %q: %v", g.src, err)
		}
		closers = append(closers, f)
		opt := "--ro-bind-fd"
		if g.write {
			opt = "--bind-fd"
		}
		a(opt, nextFD(), g.dest)
		extra = append(extra, f)
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
	a("--seccomp", nextFD())
	extra = append(extra, seccompR)
	if info || len(lp.rlimits) > 0 {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, closers, fmt.Errorf("creating bwrap info pipe: %w", err)
		}
		closers = append(closers, w)
		a("--info-fd", nextFD())
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
		a("--block-fd", nextFD())
		extra = append(extra, r)
		lp.blockW = w
	}
	a("--chdir", dirInside)

	var buf bytes.Buffer
	for _, x := range args {
		buf.WriteString(x)
		buf.WriteByte(0)
	}
	argsR, err := feedPipe(buf.Bytes())
	if err != nil {
		if infoR != nil {
			infoR.Close()
		}
		return nil, nil, closers, fmt.Errorf("passing bwrap options: %w", err)
	}
	closers = append(closers, argsR)

	env := c.Env
	if env == nil {
		env = []string{} // nil would hand bwrap toolbox's own environment
	}
	cmd = &exec.Cmd{
		Path:       path,
		Args:       append([]string{"bwrap", "--args", "3", "--", exeInside}, c.Args...),
		Env:        env, // bwrap is pid 1 inside: its environment is visible there
		Dir:        "/",
		ExtraFiles: append([]*os.File{argsR}, extra...),
	}
	return cmd, infoR, closers, nil
}

const fixBwrap = `install bubblewrap (e.g. apt-get install bubblewrap), or set sandbox = "landlock" or "auto" in the toolbox file`

// openNoFollow opens p as a path descriptor, refusing any symlink on the
// way: p was resolved just before, so a link now means it was swapped.
func openNoFollow(p string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// feedPipe returns the read end of a pipe that will deliver data then EOF.
// A writer goroutine ends once the data is read or the read end is closed
// everywhere, so a child that never starts leaves nothing behind.
func feedPipe(data []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go func() {
		_, _ = w.Write(data)
		w.Close()
	}()
	return r, nil
}

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
