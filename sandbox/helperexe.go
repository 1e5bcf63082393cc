package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// The helper and the limits wrapper (package helper) run from this
// package's initialisation, rather than from Init in main: the packages a
// binary initialises after this one are of no use to them, and they cost
// every start their initialisation (issue 13: in the toolbox binary cobra
// and the CLI's tables; in toolbox-core the JSON Schema compiler, gRPC and
// the MCP SDK, 8 to 40 ms). Everything they use is one of this package's
// dependencies, initialised by then. (A package's init always runs before
// any main, whatever the order of the others: Init needs no check of its
// own.) The reaper binary (UseReaper) runs the same code as its main.
func init() {
	if code, ok := helper.Dispatch(os.Args); ok {
		unix.Exit(code)
	}
}

// helperExe is the binary the landlock helper is started from: "" for the
// running one (/proc/self/exe), else /proc/self/fd/N of the file UseHelper
// opened.
var helperExe struct {
	mu   sync.Mutex
	file *os.File
}

// UseHelper makes landlock start its helper from the binary at path
// instead of re-executing the running one. A binary that links much (the
// toolbox-core binary: HCL, JSON Schema, gRPC) pays its package
// initialisation again at every landlock start, about 10 ms; the toolbox
// binary beside it starts in about 3 (issue 13).
//
// The file is opened here, once, and checked: a regular file, executable,
// owned by root or by the user running toolbox, writable by no one else.
// Every helper start executes that descriptor (/proc/self/fd/N), so a file
// put at path later is never run. The binary must call Init first in its
// main (toolbox does) and be built from the same source as the caller: the
// helper refuses a spec with a field it does not know, so an older helper
// fails the start instead of leaving out a restriction it has never heard
// of. Errors say why the file is refused; landlock then keeps re-executing
// the running binary.
func UseHelper(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("using %q as the landlock helper: %w", path, err)
	}
	if err := trustedExecutable(f); err != nil {
		f.Close()
		return fmt.Errorf("using %q as the landlock helper: %w", path, err)
	}
	helperExe.mu.Lock()
	helperExe.file, f = f, helperExe.file
	helperExe.mu.Unlock()
	if f != nil {
		f.Close() // a previous helper
	}
	return nil
}

// trustedExecutable checks that f is a regular executable file that only
// root or toolbox's own user can change.
func trustedExecutable(f *os.File) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	switch euid := uint32(os.Geteuid()); {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return errors.New("not a regular file")
	case st.Mode&0o111 == 0:
		return errors.New("not executable")
	case st.Uid != 0 && st.Uid != euid:
		return fmt.Errorf("owned by uid %d, neither root nor this user (uid %d)", st.Uid, euid)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("writable by others than its owner (mode %#o)", st.Mode&0o777)
	}
	return nil
}

// withHelper makes cmd, the helper's command, execute the file UseHelper
// kept instead of the running binary: the file goes last in ExtraFiles, so
// the child has it at a descriptor no other extra file is laid over, and
// the command executes /proc/self/fd/N. The helper marks it close-on-exec
// at once (markCloexec), so the tool never inherits it. Without UseHelper
// cmd is left as it is.
func withHelper(cmd *exec.Cmd) {
	helperExe.mu.Lock()
	defer helperExe.mu.Unlock()
	if f := helperExe.file; f != nil {
		execFrom(cmd, f)
	}
}

// execFrom makes cmd execute the open binary f: f goes last in
// ExtraFiles, so the child has it at a descriptor no other extra file is
// laid over, and cmd executes /proc/self/fd/N.
func execFrom(cmd *exec.Cmd, f *os.File) {
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Path = "/proc/self/fd/" + strconv.Itoa(2+len(cmd.ExtraFiles))
}
