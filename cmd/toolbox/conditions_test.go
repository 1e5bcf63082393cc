package main

import (
	"fmt"
	"os/exec"
)

// scriptCondition answers the [name] conditions of the scripts:
// [exec:prog] is built in; [rg] says ripgrep runs here.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "rg":
		return exec.Command("rg", "--version").Run() == nil, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}
