package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Limits under None: Go starts a child with no hook between fork and exec,
// so a tool's rlimits cannot be set by the process that starts it, and
// setting them on a started tool would leave it running unlimited for a
// while. Instead toolbox starts itself (/proc/self/exe, see Init) as a
// small wrapper that sets the limits on itself, joins the call's cgroup,
// drops CAP_SYS_RESOURCE and then execs the tool in its place: the tool
// has the limits from its first instruction, keeps the wrapper's pid,
// session and process group, and nothing of the wrapper stays around. The
// landlock helper starts the same wrapper inside its domain (helperFork).

// limitsArg is argv[1] of the limits wrapper.
const limitsArg = "__toolbox-limits-exec"

// The wrapper runs from this package's initialisation, not from Init in
// main: Go initialises the packages a binary links before main, and in
// toolbox-core those that come after this one (gRPC, the JSON Schema
// compiler, the MCP SDK, ...) took 8 to 40 ms on these machines, against
// 1.5 ms for those before it. Everything the wrapper uses is initialised
// by then (this package's own dependencies). It needs no Init either.
func init() {
	if len(os.Args) > 1 && os.Args[1] == limitsArg {
		unix.Exit(runLimitsExec())
	}
}

// limitsSpec is what the wrapper reads from fd 3, as JSON.
type limitsSpec struct {
	Path    string   `json:"path"`
	Argv    []string `json:"argv"` // argv[0] included
	Env     []string `json:"env"`  // the tool's environment; the wrapper's own (a Cmd caller's additions) follows it
	Rlimits []rlimit `json:"rlimits"`
	// ProcsFD is the descriptor of the call's cgroup.procs (0 = none).
	ProcsFD int `json:"procs_fd,omitempty"`
	// ExeFD, when set, is the checked executable's descriptor: the wrapper
	// executes it (/proc/self/fd/N) rather than Path, so what was hashed
	// is what runs (DESIGN.md §6).
	ExeFD int `json:"exe_fd,omitempty"`
	// StatusFD receives "ERRNO message" when the tool could not be
	// started; it is closed on exec, so EOF without a word means started.
	StatusFD int `json:"status_fd,omitempty"`
}

// runLimitsExec is the wrapper. It returns only when the tool could not be
// started: 127 when the executable is missing, 126 when it cannot be
// executed, else 125.
func runLimitsExec() int {
	// Capabilities are per thread, and the thread that execs is the one
	// whose capabilities the tool inherits.
	runtime.LockOSThread()
	markCloexec()
	var ls limitsSpec
	status, err := readSpecFD(&ls, func() int { return ls.StatusFD })
	if err == nil {
		err = ls.setUp()
	}
	if err == nil {
		run := ls.Path
		if ls.ExeFD > 2 {
			run = "/proc/self/fd/" + strconv.Itoa(ls.ExeFD)
		}
		err = syscall.Exec(run, ls.Argv, append(ls.Env, os.Environ()...))
		err = &os.PathError{Op: "exec", Path: ls.Path, Err: err}
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	if status != nil {
		_, _ = status.WriteString(statusLine(err) + "\n") // as the helper reports
		status.Close()
	} else {
		fmt.Fprintf(os.Stderr, "toolbox: starting the tool: %s\n", err)
	}
	switch {
	case errors.Is(errno, syscall.ENOENT):
		return 127
	case errors.Is(errno, syscall.EACCES), errors.Is(errno, syscall.ENOEXEC):
		return 126
	}
	return exitSetupFailed
}

func (ls *limitsSpec) setUp() error {
	if ls.Path == "" || len(ls.Argv) == 0 {
		return errors.New("incomplete spec")
	}
	if err := applyRlimits(0, ls.Rlimits); err != nil {
		return err
	}
	if ls.ProcsFD > 0 {
		f := os.NewFile(uintptr(ls.ProcsFD), "cgroup.procs")
		_, err := f.WriteString("0")
		f.Close()
		if err != nil {
			return fmt.Errorf("joining the call's cgroup: %w", err)
		}
	}
	return dropSysResource()
}

// readSpecFD decodes the JSON spec on fd 3 into v (strictly: decodeSpec),
// then opens the status descriptor statusFD reports (nil when it reports
// none). The helper and the limits wrapper both read their spec with it.
func readSpecFD(v any, statusFD func() int) (*os.File, error) {
	f := os.NewFile(3, "spec")
	if f == nil {
		return nil, errors.New("no spec descriptor")
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	if err := decodeSpec(data, v); err != nil {
		return nil, err
	}
	if fd := statusFD(); fd > 2 {
		return os.NewFile(uintptr(fd), "status"), nil
	}
	return nil, nil
}

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
	specR, err := feedPipe(data)
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
