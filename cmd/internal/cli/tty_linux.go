package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal says whether w is a terminal (a *os.File on which TCGETS
// succeeds, or such a file TerminalSafe wrapped; the wrapper is made for
// terminals only): progress is printed only there.
func IsTerminal(w io.Writer) bool {
	if _, ok := w.(*termWriter); ok {
		return true // TerminalSafe wraps terminals only
	}
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
