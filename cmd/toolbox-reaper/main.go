// Command toolbox-reaper is the process toolbox starts below an unconfined
// tool (sandbox "none"): it stays the tool's parent, kills what the tool
// leaves behind and the whole tree when toolbox dies (DESIGN.md §5). It
// links the sandbox helper alone, no cgo, so that it starts several times
// faster than a re-execution of toolbox. toolbox uses the one beside it
// when it is of the same build; see the README.
package main

import (
	"os"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

func main() { os.Exit(helper.Main()) }
