//go:build unix

package cli

import (
	"errors"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// A FIFO named toolbox beside the running binary is refused at once as
// not a regular file; opening it plainly would block FindHelper (and so
// every command that looks for the helper) forever.
func TestFindHelperRefusesFIFO(t *testing.T) {
	_, p := helperPath(t)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	err := testenv.Unblocked(t, p, func() error { _, err := FindHelper(); return err })
	if !errors.Is(err, inputfile.ErrNotRegular) {
		t.Fatalf("FindHelper with a FIFO as toolbox: %v, want a not-regular-file error", err)
	}
}
