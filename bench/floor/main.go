// Command floor is the reference floor of the `toolbox run` benchmark: the
// least a locked launcher can do. It reads a JSON lock, hashes the tool's
// binary, compares the hash, and runs the tool, passing its output through.
//
// With -reaper it is the least a launcher can do that keeps toolbox's
// guarantee for unconfined tools (DESIGN.md §5, "No orphans"): the tool
// runs below a reaper, here this binary re-executed, which becomes a
// child subreaper, gets a parent-death signal, forks the tool and waits
// for it. toolbox's reaper is also a re-executed Go binary; what it does
// beyond this one (kill the tool's leftovers, the tool's limits, a seccomp
// filter) is what the ratio against this floor measures.
//
// Usage: floor [-reaper] LOCK TOOL [ARGS...]
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
)

// reaperArg is argv[1] of the re-executed reaper: REAPER_ARG PATH ARGS...
const reaperArg = "__floor-reaper"

func main() {
	if len(os.Args) > 2 && os.Args[1] == reaperArg {
		os.Exit(reap(os.Args[2], os.Args[3:]))
	}
	args := os.Args[1:]
	reaper := len(args) > 0 && args[0] == "-reaper"
	if reaper {
		args = args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: floor [-reaper] LOCK TOOL [ARGS...]")
		os.Exit(2)
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fail(err)
	}
	var lock struct {
		Tools map[string]struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		fail(err)
	}
	t, ok := lock.Tools[args[1]]
	if !ok {
		fail(fmt.Errorf("no tool %q", args[1]))
	}
	path := filepath.Join(filepath.Dir(args[0]), t.Path)
	f, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		fail(err)
	}
	f.Close()
	if hex.EncodeToString(h.Sum(nil)) != t.SHA256 {
		fail(fmt.Errorf("hash mismatch"))
	}
	cmd := exec.Command(path, append([]string{"run"}, args[2:]...)...)
	if reaper {
		cmd = exec.Command("/proc/self/exe", append([]string{reaperArg, path, "run"}, args[2:]...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fail(err)
	}
}

// reap runs path with args below this process, a child subreaper, and
// returns the tool's exit code.
func reap(path string, args []string) int {
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		fail(e)
	}
	runtime.LockOSThread() // the tool's parent-death signal follows this thread
	pid, err := syscall.ForkExec(path, append([]string{path}, args...), &syscall.ProcAttr{
		Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fail(err)
	}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			fail(err)
		}
		if got == pid {
			return ws.ExitStatus()
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}
