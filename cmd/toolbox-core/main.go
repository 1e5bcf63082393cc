// Command toolbox-core is the part of toolbox that needs the compiler or
// the plugin host: lock, check, describe, and every command of toolbox.
// The toolbox binary hands it those commands; it can also be run directly.
package main

import (
	"os"

	"github.com/toolbox-dev/toolbox/cmd/internal/corecmd"
)

func main() { os.Exit(corecmd.Main()) }
