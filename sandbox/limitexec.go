package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// Limits under None: Go starts a child with no hook between fork and exec,
// so a tool's rlimits cannot be set by the process that starts it, and
// setting them on a started tool would leave it running unlimited for a
// while. Instead toolbox starts itself (/proc/self/exe, see Init) as a
// small wrapper that sets the limits on itself, joins the call's cgroup,
// drops CAP_SYS_RESOURCE and then execs the tool in its place: the tool
// has the limits from its first instruction, keeps the wrapper's pid,
// session and process group, and nothing of the wrapper stays around. The
// landlock helper starts the same wrapper inside its domain (helper.Fork).

// noneCmd builds the wrapper invocation for c under None with rlimits rs
// (and the call's cgroup, when cg is not nil). When status is true the
// wrapper reports a failed exec on an extra pipe, returned as statusR.
func noneCmd(c Command, rs []rlimit, cg *callCgroup, status bool) (cmd *exec.Cmd, statusR *os.File, closers []*os.File, err error) {
	path, err := unconfinedPath(c)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkExecutable(path); err != nil {
		return nil, nil, nil, err
	}
	ls := limitsSpec{Path: path, Argv: append([]string{c.Path}, c.Args...), Env: c.Env, Rlimits: rs}
	if ls.Env == nil {
		ls.Env = []string{}
	}
	defer func() {
		if err != nil {
			closeAll(closers)
			closers = nil
			if statusR != nil {
				statusR.Close()
				statusR = nil
			}
		}
	}()
	extra := []*os.File{nil}
	// What runs is what c.Exe checked: its descriptor for a binary, a
	// script's path once nobody untrusted could have swapped it.
	run, dup, err := noneExecPath(c)
	if err != nil {
		return nil, nil, nil, err
	}
	if dup != nil {
		closers = append(closers, dup)
		extra = append(extra, dup)
		ls.ExeFD = 2 + len(extra)
	} else if run != c.Path {
		ls.Path = run
	}
	if cg != nil {
		procs, err := cg.procsFile()
		if err != nil {
			return nil, nil, nil, err
		}
		closers = append(closers, procs)
		extra = append(extra, procs)
		ls.ProcsFD = 2 + len(extra)
	}
	if status {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, closers, fmt.Errorf("creating the wrapper's status pipe: %w", err)
		}
		statusR = r
		closers = append(closers, w)
		extra = append(extra, w)
		ls.StatusFD = 2 + len(extra)
	}
	data, err := json.Marshal(ls)
	if err != nil {
		return nil, statusR, closers, fmt.Errorf("encoding the wrapper's spec: %w", err)
	}
	specR, err := helper.FeedPipe(data)
	if err != nil {
		return nil, statusR, closers, fmt.Errorf("passing the wrapper's spec: %w", err)
	}
	closers = append(closers, specR)
	extra[0] = specR
	cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{os.Args[0], limitsArg},
		Env:        []string{},
		Dir:        c.Dir,
		ExtraFiles: extra,
	}
	return cmd, statusR, closers, nil
}

// readLimitsStatus waits until the wrapper has exec'd the tool (EOF) or
// reported why it could not, in the helper's words (statusLine); the error
// then wraps ErrStartFailed, and for a failed exec the errno
// (fs.ErrNotExist for a missing executable).
func readLimitsStatus(r *os.File) error {
	defer r.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if line == "" && err == io.EOF {
		return nil
	}
	line = strings.TrimSuffix(line, "\n")
	switch {
	case statusError(line) != nil:
		return statusError(line)
	case line == "":
		return fmt.Errorf("%w: reading the limits wrapper's status: %w", ErrStartFailed, err)
	}
	return fmt.Errorf("%w: limits wrapper: %s", ErrStartFailed, line)
}
