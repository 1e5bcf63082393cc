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
// instead when CI requires them (testenv.Required); [cgroup_pids] says a
// cgroup v2 pids controller is delegated here (sandbox.DetectCgroup).
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
	case "cgroup_pids":
		// Not a sandbox requirement: machines without a delegated cgroup
		// v2 run the scripts' other half (processes refused).
		return sandbox.DetectCgroup().Pids, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
