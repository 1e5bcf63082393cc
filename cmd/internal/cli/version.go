package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with
// -ldflags "-X toolbox/cmd/internal/cli.version=...".
var version = ""

// NewCmdVersion prints the version, GOOS and GOARCH.
func NewCmdVersion(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of toolbox",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version
			if v == "" {
				v = "devel"
				if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
					v = bi.Main.Version
				}
			}
			fmt.Fprintf(g.IO.Out, "toolbox %s %s/%s\n", v, runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
