package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// CoreName is the companion binary that runs the commands this package
// does not link (lock, check, describe, and runs that need a JSON Schema
// validator or a plugin host). It is built from cmd/toolbox-core.
const CoreName = "toolbox-core"

// FindCore locates toolbox-core: beside the running binary first (where go
// install and go build -o bin/ ./cmd/... put both; os.Executable resolves
// a symlink to toolbox), then on PATH. One beside toolbox always wins over
// one on PATH, which may belong to another install.
func FindCore() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), CoreName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(CoreName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found beside %s or on PATH; %s", CoreName, os.Args[0], sandbox.InstallFix)
}

// ExecCore replaces this process with toolbox-core, given the same
// arguments and environment. It returns only on failure.
func ExecCore() error {
	p, err := FindCore()
	if err != nil {
		return err
	}
	argv := append([]string{p}, os.Args[1:]...)
	if err := syscall.Exec(p, argv, os.Environ()); err != nil {
		return fmt.Errorf("running %s: %w", p, err)
	}
	return errors.New("unreachable")
}

// delegatedAnnotation marks the commands DelegatedCmd builds.
const delegatedAnnotation = "toolbox/delegated"

// DelegatedCmd is a command of toolbox-core listed in toolbox's help: its
// whole command line, flags included, is handed to toolbox-core.
func DelegatedCmd(g *Globals, use, short string) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short,
		Annotations:        map[string]string{delegatedAnnotation: "true"},
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.Delegate == nil {
				return fmt.Errorf("%s: this binary cannot run it", cmd.Name())
			}
			return g.Delegate()
		},
	}
}

// ToolboxName is the fast binary, built from cmd/toolbox.
const ToolboxName = "toolbox"

// toolboxMainPath is the package the toolbox binary is built from.
const toolboxMainPath = "github.com/toolbox-dev/toolbox/cmd/toolbox"

// FindHelper locates the toolbox binary beside the running one (never on
// PATH), for toolbox-core to start its landlock helper from
// (sandbox.UseHelper): it starts several times faster. The file counts only
// when its Go build information says it is this module's cmd/toolbox, of
// the same version and source revision as the running binary and built by
// the same Go (sandbox.SameBuild); another program of that name (an
// unrelated "toolbox" installed in the same directory) is not used.
func FindHelper() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), ToolboxName)
	// A regular file only: a FIFO there would block a plain open.
	f, err := inputfile.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := sandbox.SameBuild(f, toolboxMainPath); err != nil {
		return "", fmt.Errorf("%s is not the toolbox binary of this build: %w", p, err)
	}
	return p, nil
}

// ReaperName is the reaper binary, built from cmd/toolbox-reaper: unconfined
// tools run below it (sandbox.UseReaper).
const ReaperName = "toolbox-reaper"

// UseReaper makes unconfined tools start below the reaper beside the
// running binary (never one on PATH); sandbox.UseReaper checks it at the
// first such start.
func UseReaper() {
	if self, err := os.Executable(); err == nil {
		sandbox.UseReaper(filepath.Join(filepath.Dir(self), ReaperName))
	}
}
