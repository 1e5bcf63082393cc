package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with
// -ldflags "-X github.com/toolbox-dev/toolbox/cmd/internal/cli.version=...".
var version = ""

// Version is the version of this build: the -ldflags one, else the module
// version `go install` recorded, else "devel".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// versionInfo is the --json output of version: stable keys.
type versionInfo struct {
	Version string `json:"version"`
	GOOS    string `json:"goos"`
	GOARCH  string `json:"goarch"`
	Go      string `json:"go"`
}

// versionLine is what `toolbox version` and `toolbox --version` print.
func versionLine() string {
	return fmt.Sprintf("toolbox %s %s/%s\n", Version(), runtime.GOOS, runtime.GOARCH)
}

// NewCmdVersion prints the version, GOOS and GOARCH (--json: also the Go
// version, as an object).
func NewCmdVersion(g *Globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of toolbox",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return WriteJSON(g.IO.Out, versionInfo{Version: Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Go: runtime.Version()})
			}
			_, err := fmt.Fprint(g.IO.Out, versionLine())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print version, goos, goarch and go as a JSON object")
	return cmd
}
