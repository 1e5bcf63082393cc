package main

import (
	"fmt"
	"os/exec"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// scriptCondition answers the [name] conditions of the scripts:
// [exec:prog] is built in; [rg] says ripgrep runs here.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "rg":
		return exec.Command("rg", "--version").Run() == nil, nil
	case "bwrap":
		return sandbox.Detect().Bwrap, nil
	case "landlock":
		return sandbox.Detect().Landlock, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
