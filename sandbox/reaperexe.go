package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime/debug"
	"sync"
)

// ReaperMainPath is the package the reaper binary is built from.
const ReaperMainPath = "github.com/toolbox-dev/toolbox/cmd/toolbox-reaper"

// InstallFix is the fix when toolbox's binaries (toolbox, toolbox-core,
// toolbox-reaper) are not found together or are not of one build: the
// README's install, static (CGO_ENABLED=0) as it builds them.
const InstallFix = "install toolbox's binaries together: CGO_ENABLED=0 go install github.com/toolbox-dev/toolbox/cmd/...@latest (in a clone: CGO_ENABLED=0 go build -o bin/ ./cmd/...)"

// fixReaper is the fix of every refused reaper.
const fixReaper = InstallFix

// reaperExe is the reaper binary UseReaper named, opened and checked at
// the first start of an unconfined tool.
var reaperExe struct {
	mu   sync.Mutex
	path string
	done bool
	file *os.File // nil: re-execute the helper's binary (none at path)
	err  error
}

// UseReaper makes the sandbox helper (the reaper of unconfined tools and
// of landlock ones, which it also restricts) start from the reaper binary
// at path (cmd/toolbox-reaper) instead of a re-execution of the running
// binary (or of UseHelper's): it links package helper alone and no cgo,
// so it starts in about a millisecond where a toolbox binary takes
// several (issue 13).
//
// The file is opened at the first start that needs the helper, once, and
// checked: a regular executable file owned by root or by the user running
// toolbox, writable by no one else, whose Go build information says it is
// ReaperMainPath of the same module version, source revision and Go as
// the running binary (the helper's spec must mean the same to both). Every
// start executes that descriptor (/proc/self/fd/N), so a file put at path
// later is never run. No file at path leaves the re-execution in place
// (every guarantee holds; only the start is slower). A file that is there
// but fails a check refuses every helper start with ErrStartFailed, naming
// the file, what is wrong and the fix: it is not silently bypassed, since
// it may be a replaced binary. UseReaper("") forgets the reaper.
func UseReaper(path string) {
	reaperExe.mu.Lock()
	defer reaperExe.mu.Unlock()
	if reaperExe.file != nil {
		reaperExe.file.Close()
	}
	reaperExe.path, reaperExe.done, reaperExe.file, reaperExe.err = path, false, nil, nil
}

// reaperFile is UseReaper's file, opened and checked on first use: nil
// without an error when there is none to use.
func reaperFile() (*os.File, error) {
	reaperExe.mu.Lock()
	defer reaperExe.mu.Unlock()
	if !reaperExe.done && reaperExe.path != "" {
		reaperExe.done = true
		reaperExe.file, reaperExe.err = openReaper(reaperExe.path)
	}
	return reaperExe.file, reaperExe.err
}

func openReaper(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil {
		err = trustedExecutable(f)
		if err == nil {
			err = SameBuild(f, ReaperMainPath)
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the reaper %q cannot be used: %v; %s", ErrStartFailed, path, err, fixReaper)
	}
	return f, nil
}

// SameBuild checks that the Go binary read through r was built from the
// package mainPath of the running binary's module, at the same module
// version and source revision and by the same Go, from its build
// information (read by readBuildInfo: within bounds, from the ELF
// section alone). Errors say which differs.
func SameBuild(r io.ReaderAt, mainPath string) error {
	theirs, err := readBuildInfo(r)
	if err != nil {
		return fmt.Errorf("reading its build information: %w", err)
	}
	ours, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("the running binary has no build information")
	}
	switch {
	case theirs.Path != mainPath:
		return fmt.Errorf("it is %q, not %q", theirs.Path, mainPath)
	case theirs.Main.Path != ours.Main.Path || theirs.Main.Version != ours.Main.Version:
		return fmt.Errorf("it is of module %s %s, not %s %s", theirs.Main.Path, theirs.Main.Version, ours.Main.Path, ours.Main.Version)
	case theirs.GoVersion != ours.GoVersion:
		return fmt.Errorf("it was built by %s, not %s", theirs.GoVersion, ours.GoVersion)
	case buildSetting(theirs, "vcs.revision") != buildSetting(ours, "vcs.revision"):
		return fmt.Errorf("it was built from revision %q, not %q", buildSetting(theirs, "vcs.revision"), buildSetting(ours, "vcs.revision"))
	}
	return nil
}

// buildSetting is the value of key in bi's build settings, "" when unset.
func buildSetting(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// withReaper makes cmd, the helper's command, execute UseReaper's file
// (execFrom), as withHelper does for UseHelper's. It says whether it did;
// the error is the reaper's refusal.
func withReaper(cmd *exec.Cmd) (bool, error) {
	f, err := reaperFile()
	if f == nil || err != nil {
		return false, err
	}
	execFrom(cmd, f)
	return true, nil
}
