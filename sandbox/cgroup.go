package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CgroupEnv names the environment variable an operator sets to the cgroup
// (a directory of the cgroup v2 mount) under which toolbox creates one
// cgroup per call. Unset, toolbox uses the cgroup it runs in. Either way
// that cgroup must let toolbox enable the memory and pids controllers for
// its children: cgroup v2 allows that only in a cgroup that holds no
// process (the root cgroup aside), e.g. a systemd unit with Delegate=yes
// and DelegateSubgroup= set, where toolbox runs in the subgroup and
// TOOLBOX_CGROUP names the unit's cgroup.
const CgroupEnv = "TOOLBOX_CGROUP"

// cgroupMount is where cgroup v2 must be mounted for toolbox to use it.
const cgroupMount = "/sys/fs/cgroup"

// CgroupSupport says what cgroup v2 offers toolbox on this machine
// (DetectCgroup). The zero value offers nothing.
type CgroupSupport struct {
	// Dir is the cgroup under which each call gets a cgroup of its own;
	// "" when cgroup v2 cannot be used, and Reason says why.
	Dir    string
	Reason string
	// Memory and Pids: the controller is enabled for Dir's children, so
	// memory.max and pids.max bound each call. The reasons say why not.
	Memory       bool
	MemoryReason string
	Pids         bool
	PidsReason   string
}

var cgroupDetect = sync.OnceValue(func() CgroupSupport {
	return detectCgroup(cgroupMount, os.Getenv(CgroupEnv), "/proc/self/cgroup")
})

// DetectCgroup finds out, once per process, whether cgroup v2 is mounted
// at /sys/fs/cgroup and delegates the memory and pids controllers to
// toolbox (see CgroupEnv). It enables them in that cgroup's
// cgroup.subtree_control when they are available but not yet enabled.
func DetectCgroup() CgroupSupport { return cgroupDetect() }

func detectCgroup(mount, env, selfCgroup string) CgroupSupport {
	var s CgroupSupport
	none := func(format string, args ...any) CgroupSupport {
		s.Reason = fmt.Sprintf(format, args...)
		s.MemoryReason, s.PidsReason = s.Reason, s.Reason
		return s
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil {
		return none("%s: %v", mount, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		why := fmt.Sprintf("%s is not a cgroup v2 mount (this host uses cgroup v1 or the hybrid layout)", mount)
		if ctrl, err := os.ReadFile(filepath.Join(mount, "unified", "cgroup.controllers")); err == nil {
			why += fmt.Sprintf("; the cgroup v2 mount at %s offers only %q", filepath.Join(mount, "unified"), strings.TrimSpace(string(ctrl)))
		}
		return none("%s", why)
	}
	dir := env
	if dir == "" {
		rel, err := ownCgroup(selfCgroup)
		if err != nil {
			return none("%v", err)
		}
		dir = filepath.Join(mount, rel)
	} else if !filepath.IsAbs(dir) || !within(filepath.Clean(dir), mount) {
		return none("%s=%q is not a directory under %s", CgroupEnv, dir, mount)
	}
	dir = filepath.Clean(dir)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return none("cannot create cgroups in %s: %v", dir, err)
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return none("reading the controllers of %s: %v", dir, err)
	}
	s.Dir = dir
	enabled, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	check := func(name string) (bool, string) {
		switch {
		case !hasWord(avail, name):
			return false, fmt.Sprintf("the %s controller is not available in %s", name, dir)
		case hasWord(enabled, name):
			return true, ""
		}
		err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+name), 0)
		if err == nil {
			return true, ""
		}
		why := fmt.Sprintf("enabling %s in %s/cgroup.subtree_control: %v", name, dir, unwrapErrno(err))
		if errors.Is(err, syscall.EBUSY) {
			why += fmt.Sprintf(" (the cgroup holds processes; set %s to a delegated cgroup that holds none)", CgroupEnv)
		}
		return false, why
	}
	s.Memory, s.MemoryReason = check("memory")
	s.Pids, s.PidsReason = check("pids")
	if !s.Memory && !s.Pids {
		s.Dir, s.Reason = "", s.MemoryReason
	}
	return s
}

// ownCgroup reads this process's cgroup v2 path ("0::/path") from
// /proc/self/cgroup.
func ownCgroup(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", file, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s names no cgroup v2 path", file)
}

func hasWord(list []byte, w string) bool {
	for _, f := range bytes.Fields(list) {
		if string(f) == w {
			return true
		}
	}
	return false
}

// needed says whether l asks for something the cgroup enforces here.
func (cg CgroupSupport) needed(l Limits) bool {
	return cg.Dir != "" && (l.Memory > 0 && cg.Memory || l.Processes > 0 && cg.Pids)
}

// callCgroup is the cgroup of one call: created before the start, the
// tool placed in it from its first instruction, removed once the call
// has ended with whatever is left in it killed.
type callCgroup struct {
	dir string
	fd  *os.File // the directory, for SysProcAttr.CgroupFD (CLONE_INTO_CGROUP)
}

var cgroupSeq atomic.Uint64

// newCallCgroup creates the call's cgroup under cg.Dir with memory.max
// (no swap beyond it, the whole tree killed together on OOM) and pids.max
// = l.Processes + extra (extra counts toolbox's own processes inside:
// bwrap and the sandbox's init).
func newCallCgroup(cg CgroupSupport, l Limits, extra uint64) (*callCgroup, error) {
	dir := filepath.Join(cg.Dir, fmt.Sprintf("toolbox-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the call's cgroup: %w", err)
	}
	c := &callCgroup{dir: dir}
	fail := func(err error) (*callCgroup, error) {
		c.remove()
		return nil, err
	}
	write := func(file, value string, optional bool) error {
		err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
		if err != nil && !(optional && errors.Is(err, fs.ErrNotExist)) {
			return fmt.Errorf("setting %s of the call's cgroup to %s: %w", file, value, err)
		}
		return nil
	}
	if l.Memory > 0 && cg.Memory {
		for _, w := range []struct {
			file, value string
			optional    bool
		}{{"memory.max", strconv.FormatUint(l.Memory, 10), false}, {"memory.swap.max", "0", true}, {"memory.oom.group", "1", true}} {
			if err := write(w.file, w.value, w.optional); err != nil {
				return fail(err)
			}
		}
	}
	if l.Processes > 0 && cg.Pids {
		if err := write("pids.max", strconv.FormatUint(l.Processes+extra, 10), false); err != nil {
			return fail(err)
		}
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return fail(fmt.Errorf("opening the call's cgroup: %w", err))
	}
	c.fd = f
	return c, nil
}

// procsFile opens the cgroup's cgroup.procs for writing: a process that
// writes "0" there joins the cgroup (the none wrapper, just before exec).
func (c *callCgroup) procsFile() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(c.dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the call's cgroup: %w", err)
	}
	return f, nil
}

// cgroupRemoveTimeout bounds how long remove waits for killed processes
// to leave the cgroup.
const cgroupRemoveTimeout = 5 * time.Second

// remove kills whatever is left in the cgroup (cgroup.kill, or SIGKILL to
// each member on kernels before 5.14) and removes it. Errors are not
// reported: a cgroup that outlives the timeout is left behind, empty of
// anything toolbox could still kill.
func (c *callCgroup) remove() {
	if c.fd != nil {
		c.fd.Close()
	}
	deadline := time.Now().Add(cgroupRemoveTimeout)
	for {
		err := unix.Rmdir(c.dir)
		if err == nil || errors.Is(err, syscall.ENOENT) || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return
		}
		c.kill()
		time.Sleep(2 * time.Millisecond)
	}
}

func (c *callCgroup) kill() {
	if os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	data, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	for _, f := range bytes.Fields(data) {
		if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeAfter removes the cgroup once the process pid has exited (Cmd:
// the caller owns the wait), or at once when pid is 0.
func (c *callCgroup) removeAfter(pid int) {
	if pid <= 0 {
		c.remove()
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		c.remove()
		return
	}
	go func() {
		defer unix.Close(fd)
		for {
			_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		c.remove()
	}()
}
