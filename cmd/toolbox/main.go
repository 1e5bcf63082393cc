// Command toolbox runs locked tools: run, list, schema and version start
// fast because this binary links no HCL parser, JSON Schema library or
// gRPC; lock, check and describe (and runs that need a JSON Schema
// validator or the plugin host) are handed to toolbox-core, built beside it
// from cmd/toolbox-core. See the README.
package main

import (
	"os"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
)

func main() { os.Exit(cli.Main()) }
