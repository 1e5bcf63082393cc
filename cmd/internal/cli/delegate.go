package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
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
	return "", fmt.Errorf("%s not found beside %s or on PATH; install both binaries together: go install github.com/toolbox-dev/toolbox/cmd/...@latest (in a clone: go build -o bin/ ./cmd/...)", CoreName, os.Args[0])
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
