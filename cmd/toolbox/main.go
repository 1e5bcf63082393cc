// Command toolbox compiles a toolbox file into a lock and launches the
// locked tools. See the README for the commands.
package main

import "os"

func main() { os.Exit(Main()) }
