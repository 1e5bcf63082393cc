package compiler

import (
	"fmt"
	"os"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// privateHome creates the HOME one describe runs with (DESIGN.md §2): a
// fresh empty directory (mode 0700, under os.TempDir) that nothing else
// uses, so that a tool which reads HOME (or writes a cache under it) while
// it describes itself still locks, and learns nothing about the operator's
// home. When spec is not nil (describe runs sandboxed) the directory is
// added to its write grants, so the tool finds it inside its sandbox. The
// returned func removes the directory and everything the tool left in it.
func privateHome(spec *sandbox.Spec) (string, func(), error) {
	dir, err := os.MkdirTemp("", "toolbox-describe-home-")
	if err != nil {
		return "", nil, fmt.Errorf("creating the private HOME of describe: %w", err)
	}
	if spec != nil {
		spec.Write = append(spec.Write, dir)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
