package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// scriptCondition answers the [name] conditions of the scripts:
// [exec:prog] is built in; [rg] says ripgrep runs here; [bwrap],
// [landlock] and [root] say the sandbox can run, and fail the script
// instead when CI requires them (testenv.Required).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "rg":
		return exec.Command("rg", "--version").Run() == nil, nil
	case "bwrap":
		s := sandbox.Detect()
		return testenv.Condition(cond, s.Bwrap, s.BwrapReason)
	case "landlock":
		s := sandbox.Detect()
		return testenv.Condition(cond, s.Landlock, s.LandlockReason)
	case "root":
		return testenv.Condition(cond, os.Geteuid() == 0, "not running as root")
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
