package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal says whether w is a terminal (a *os.File on which TCGETS
// succeeds): progress is printed only there.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
