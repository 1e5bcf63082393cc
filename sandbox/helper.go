package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// exitSetupFailed is the helper's exit code when the tool never started
// (DESIGN.md §7: 125 = toolbox failed before launch).
const exitSetupFailed = 125

// runHelper is the landlock helper: it restricts one thread, starts the
// tool from it, stays its parent as a child subreaper, and when the tool
// ends kills every remaining descendant and exits with the tool's code
// (128+signal when it was killed). It returns the exit code.
func runHelper() int {
	fmt.Fprintln(os.Stderr, "T main", time.Now().UnixMicro())
	hs, status, err := readHelperSpec()
	fmt.Fprintln(os.Stderr, "T spec", time.Now().UnixMicro())
	if err != nil {
		reportHelper(status, err)
		return exitSetupFailed
	}
	sigs := make(chan os.Signal, 4)
	// The tool shares the helper's process group, so a group signal
	// reaches it directly; the helper only has to survive it.
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if os.Getppid() != hs.ParentPID {
		reportHelper(status, errors.New("toolbox exited before the tool started"))
		return exitSetupFailed
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		reportHelper(status, fmt.Errorf("becoming child subreaper: %w", err))
		return exitSetupFailed
	}
	pid, exited, err := startRestricted(hs)
	if err != nil {
		reportHelper(status, err)
		return exitSetupFailed
	}
	if status != nil {
		_, _ = status.WriteString("ok\n")
		status.Close()
	}
	for {
		select {
		case code := <-exited:
			fmt.Fprintln(os.Stderr, "T exited", time.Now().UnixMicro())
			reapDescendants()
			return code
		case sig := <-sigs:
			if os.Getppid() == hs.ParentPID {
				continue
			}
			// Our parent died (Pdeathsig): nobody will stop the tool.
			_ = syscall.Kill(pid, syscall.SIGKILL)
			reapDescendants()
			return 128 + int(sig.(syscall.Signal))
		}
	}
}

func readHelperSpec() (*helperSpec, *os.File, error) {
	markCloexec()
	f := os.NewFile(3, "helper-spec")
	if f == nil {
		return nil, nil, errors.New("no spec descriptor")
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("reading spec: %w", err)
	}
	var hs helperSpec
	if err := json.Unmarshal(data, &hs); err != nil {
		return nil, nil, fmt.Errorf("decoding spec: %w", err)
	}
	var status *os.File
	if hs.StatusFD > 2 {
		status = os.NewFile(uintptr(hs.StatusFD), "helper-status")
	}
	if hs.Path == "" || len(hs.Argv) == 0 || hs.Dir == "" {
		return nil, status, errors.New("incomplete spec")
	}
	return &hs, status, nil
}

func reportHelper(status *os.File, err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if status != nil {
		_, _ = status.WriteString(msg + "\n")
		status.Close()
		return
	}
	fmt.Fprintf(os.Stderr, "toolbox sandbox helper: %s\n", msg)
}

// startRestricted builds the ruleset, then on a dedicated thread (never
// the thread group leader, which must stay unrestricted so that the tool
// cannot signal the helper) sets no_new_privs, enforces the ruleset and
// forks the tool. That thread stays alive, reaping children, until the
// tool has exited: the tool's Pdeathsig follows the thread that forked it.
func startRestricted(hs *helperSpec) (int, <-chan int, error) {
	if abi := landlockABI(); abi < requiredLandlockABI {
		return 0, nil, fmt.Errorf("landlock ABI %d is required, this kernel offers %d", requiredLandlockABI, abi)
	}
	cfg, err := landlockConfig()
	if err != nil {
		return 0, nil, err
	}
	rules, files, err := landlockRules(hs)
	defer closeAll(files)
	if err != nil {
		return 0, nil, err
	}
	fmt.Fprintln(os.Stderr, "T opened", time.Now().UnixMicro())
	rulesetFD, flags, err := cfg.NewRulesetFD(rules...)
	fmt.Fprintln(os.Stderr, "T ruleset", time.Now().UnixMicro())
	if err != nil {
		return 0, nil, fmt.Errorf("creating the landlock ruleset: %w", err)
	}
	defer unix.Close(rulesetFD)
	cred, err := credential(hs.RunAs, Landlock)
	if err != nil {
		return 0, nil, err
	}
	type result struct {
		pid int
		err error
	}
	started := make(chan result, 1)
	exited := make(chan int, 1) // the tool's exit code
	go onNonLeaderThread(func() {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			started <- result{err: fmt.Errorf("setting no_new_privs: %w", err)}
			return
		}
		if err := llsys.LandlockRestrictSelf(rulesetFD, flags); err != nil {
			started <- result{err: fmt.Errorf("enforcing the landlock ruleset: %w", err)}
			return
		}
		pid, err := syscall.ForkExec(hs.Path, hs.Argv, &syscall.ProcAttr{
			Dir:   hs.Dir,
			Env:   hs.Env,
			Files: []uintptr{0, 1, 2},
			Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred},
		})
		if err != nil {
			started <- result{err: &os.PathError{Op: "exec", Path: hs.Path, Err: err}}
			return
		}
		fmt.Fprintln(os.Stderr, "T forked", time.Now().UnixMicro())
		started <- result{pid: pid}
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil { // cannot happen: only this thread reaps while the tool runs
				exited <- exitSetupFailed
				return
			}
			if got == pid {
				exited <- exitCode(ws)
				return
			}
		}
	})
	r := <-started
	return r.pid, exited, r.err
}

// landlockRules opens every granted path without following symlinks (they
// were resolved by the parent: a link now means a swap) and grants it
// through /proc/self/fd, so the rule covers exactly the checked inode.
// Directories get directory rights, files file rights (directory rights on
// a file are an error in Landlock).
func landlockRules(hs *helperSpec) ([]landlock.Rule, []*os.File, error) {
	var rules []landlock.Rule
	var files []*os.File
	add := func(p string, write bool) error {
		f, err := openNoFollow(p)
		if err != nil {
			return fmt.Errorf("opening granted path: %w", err)
		}
		files = append(files, f)
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return fmt.Errorf("inspecting granted path %q: %w", p, err)
		}
		ref := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
		dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		switch {
		case dir && write:
			rules = append(rules, landlock.RWDirs(ref))
		case dir:
			rules = append(rules, landlock.RODirs(ref))
		case write:
			rules = append(rules, landlock.RWFiles(ref))
		default:
			rules = append(rules, landlock.ROFiles(ref))
		}
		return nil
	}
	for _, p := range hs.Read {
		if err := add(p, false); err != nil {
			return nil, files, err
		}
	}
	for _, p := range hs.Write {
		if err := add(p, true); err != nil {
			return nil, files, err
		}
	}
	return rules, files, nil
}

// onNonLeaderThread runs f on a locked OS thread that is not the thread
// group leader. The goroutine is never unlocked: when f returns the thread
// (restricted by f) ends with it instead of serving other goroutines.
func onNonLeaderThread(f func()) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		f()
		return
	}
	// Keep the leader busy so that the new goroutine lands elsewhere.
	done := make(chan struct{})
	go func() {
		onNonLeaderThread(f)
		close(done)
	}()
	<-done
}

// reapDescendants kills and reaps everything below the helper. As a child
// subreaper it inherits every orphan, so no child left means no
// descendant left.
func reapDescendants() {
	self := os.Getpid()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR) || pid > 0:
			continue
		case err != nil: // ECHILD: done
			return
		}
		killDescendants(self)
		_, _ = syscall.Wait4(-1, &ws, 0, nil)
	}
}

func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
