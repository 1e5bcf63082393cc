//go:build !linux

package cli

import "os"

// isTerminal is false where toolbox cannot tell: output is never filtered
// there.
func isTerminal(*os.File) bool { return false }
