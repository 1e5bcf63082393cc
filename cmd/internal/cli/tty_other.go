//go:build !linux

package cli

import "io"

// IsTerminal is false off Linux: no progress is printed there.
func IsTerminal(w io.Writer) bool { return false }
