package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// An unconfined tool (mechanism None) is started through the same hidden
// helper as a landlock tool, with nothing restricted: the toolbox binary
// re-executed in its own session, told of toolbox's death by a
// parent-death signal, staying the tool's parent as a child subreaper. So
// every descendant of the tool, setsid or double-forked ones included,
// dies when the tool ends (the helper kills what is left before exiting)
// and when toolbox dies (the helper then kills the tool and everything
// below it). DESIGN.md §5 says why a reaper rather than a pid namespace
// or a cgroup.

// reaperCmd builds the helper invocation that runs c unconfined: the tool
// runs as toolbox's user (or run_as), with c's environment, in c.Dir ("" =
// toolbox's working directory). Without Init (the test binaries of
// packages that never start the helper) the child is started directly, as
// before the reaper: its group is killed when it ends, but a descendant
// that left the group survives, also toolbox's death.
func reaperCmd(s *Spec, c Command, cred *syscall.Credential, status bool, lp *limitPlan) (cmd *exec.Cmd, statusR *os.File, closers []*os.File, err error) {
	path, err := unconfinedPath(c)
	if err != nil {
		return nil, nil, nil, err
	}
	if !initDone.Load() {
		run, dup, err := noneExecPath(c)
		if err != nil {
			return nil, nil, nil, err
		}
		if dup != nil {
			closers = append(closers, dup)
		}
		if run == c.Path {
			run = path
		}
		cmd = exec.Command(run, c.Args...)
		cmd.Args[0] = c.Path
		cmd.Dir = c.Dir
		cmd.Env = c.Env
		if cmd.Env == nil {
			cmd.Env = []string{}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
		return cmd, nil, closers, nil
	}
	if err := checkExecutable(path); err != nil {
		return nil, nil, nil, err
	}
	hs := helperSpec{
		Plain:     true,
		Path:      path,
		Argv:      append([]string{c.Path}, c.Args...),
		Env:       c.Env,
		RunAs:     s.RunAs,
		ParentPID: os.Getpid(),
	}
	if hs.Env == nil {
		hs.Env = []string{}
	}
	cmd, statusR, closers, err = helperCmd(&hs, status, lp, c.Exe, None, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	cmd.Dir = c.Dir // the tool inherits the helper's working directory
	cmd.SysProcAttr = helperSysProcAttr()
	return cmd, statusR, closers, nil
}

// unconfinedPath is the file an unconfined c runs, as os/exec finds it
// (a bare name looked up on PATH, a relative path taken relative to
// c.Dir), made absolute: the child starts in c.Dir.
func unconfinedPath(c Command) (string, error) {
	path := c.Path
	switch {
	case !strings.Contains(path, "/"):
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrStartFailed, err)
		}
		path = p
	case !filepath.IsAbs(path) && c.Dir != "":
		path = filepath.Join(c.Dir, path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrStartFailed, err)
	}
	return abs, nil
}

// helperCmd builds the invocation of the helper for hs: the current
// binary re-executed with argv[0] preserved and argv[1] = helperArg, with
// an empty environment (the tool's travels in the spec). Its descriptors:
// fd 3 the spec; fd 4 the status pipe when status is true (the helper
// reports "ok" or its setup error there; returned as statusR), else
// closed; then the call's cgroup.procs (limits), the checked executable
// (exe, when not nil: run from that descriptor, or for a script by its
// path once it is swap-proof under m) and the descriptors of hs.Grants
// (landlock). closers are the child's ends, starting with the ones the
// caller passes in; on error every one of them is closed.
func helperCmd(hs *helperSpec, status bool, lp *limitPlan, exe *Executable, m Mechanism, closers []*os.File) (cmd *exec.Cmd, statusR *os.File, _ []*os.File, err error) {
	fail := func(err error) (*exec.Cmd, *os.File, []*os.File, error) {
		closeAll(closers)
		if statusR != nil {
			statusR.Close()
		}
		return nil, nil, nil, err
	}
	extra := []*os.File{nil, nil}
	if status {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(fmt.Errorf("creating helper status pipe: %w", err))
		}
		closers = append(closers, w)
		extra[1] = w
		hs.StatusFD = 4
		statusR = r
	}
	if lp != nil {
		// The helper gives the tool its limits through the limits
		// wrapper, which also joins the call's cgroup (helper.Fork).
		hs.Rlimits = lp.rlimits
		if lp.cg != nil {
			procs, err := lp.cg.procsFile()
			if err != nil {
				return fail(err)
			}
			closers = append(closers, procs)
			hs.ProcsFD = 3 + len(extra)
			extra = append(extra, procs)
		}
	}
	if exe != nil {
		if exe.script {
			if err := exe.swapProof(m); err != nil {
				return fail(err)
			}
			hs.Script = true
		}
		hs.ExeFD = 3 + len(extra)
		extra = append(extra, exe.f)
	}
	for i := range hs.Grants {
		g := &hs.Grants[i]
		if g.File == nil {
			f, err := helper.OpenNoFollow(g.Path)
			if err != nil {
				return fail(refuse(FieldSandbox, m, "check that nothing replaces system paths while toolbox starts the tool", "opening %q: %v", g.Path, err))
			}
			closers = append(closers, f)
			g.File = f
		}
		g.FD = 3 + len(extra)
		extra = append(extra, g.File)
	}
	if hs.Env == nil {
		hs.Env = []string{}
	}
	data, err := hs.MarshalBinary()
	if err != nil {
		return fail(fmt.Errorf("encoding helper spec: %w", err))
	}
	specR, err := helper.FeedPipe(data)
	if err != nil {
		return fail(fmt.Errorf("passing helper spec: %w", err))
	}
	closers = append(closers, specR)
	extra[0] = specR
	cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{os.Args[0], helperArg},
		Env:        []string{},
		Dir:        "/",
		ExtraFiles: extra,
	}
	// The reaper binary (UseReaper), else the binary UseHelper chose,
	// else this one.
	used, err := withReaper(cmd)
	if err != nil {
		return fail(err)
	}
	if !used {
		withHelper(cmd)
	}
	return cmd, statusR, closers, nil
}

// statusError is the parent's reading of a status line that is not "ok".
func statusError(line string) error {
	if rest, ok := strings.CutPrefix(line, errnoPrefix); ok {
		n, path, _ := strings.Cut(rest, " ")
		if no, err := strconv.Atoi(n); err == nil {
			return fmt.Errorf("%w: %w", ErrStartFailed, &os.PathError{Op: "exec", Path: path, Err: syscall.Errno(no)})
		}
	}
	return nil
}
