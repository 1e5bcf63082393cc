package helper

import (
	"fmt"
	"os"
)

// Main is the program of the reaper binary (cmd/toolbox-reaper): Dispatch
// of os.Args. Package sandbox starts it; run by hand it says so and
// returns 2.
func Main() int {
	if code, ok := Dispatch(os.Args); ok {
		return code
	}
	fmt.Fprintln(os.Stderr, "toolbox-reaper: toolbox starts this program below the tools it runs; it is not run by hand")
	return 2
}

// Dispatch runs the sandbox helper (Run) or the limits wrapper
// (RunLimits) when args[1] (args is a process's argv) is Arg or
// LimitsArg, and returns its exit code and true; otherwise it returns
// false and runs nothing.
func Dispatch(args []string) (code int, ok bool) {
	if len(args) > 1 {
		switch args[1] {
		case Arg:
			return Run(), true
		case LimitsArg:
			return RunLimits(), true
		}
	}
	return 0, false
}
