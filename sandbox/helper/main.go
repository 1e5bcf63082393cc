package helper

import (
	"fmt"
	"os"
)

// Main is the program of the reaper binary (cmd/toolbox-reaper): the
// sandbox helper (Run) or the limits wrapper (RunLimits), by argv[1]. Package sandbox starts it; run
// by hand it says so and returns 2.
func Main() int {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case Arg:
			return Run()
		case LimitsArg:
			return RunLimits()
		}
	}
	fmt.Fprintln(os.Stderr, "toolbox-reaper: toolbox starts this program below the tools it runs; it is not run by hand")
	return 2
}
