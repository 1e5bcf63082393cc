//go:build unix

package mcpconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// A FIFO at the client file's place is refused at once, not waited on
// (nothing ever writes to it), and stays a FIFO; a regular file at a
// relative path is written beside it, not through the system's temporary
// directory.
func TestWriteRefusesAFIFO(t *testing.T) {
	fifo := testenv.FIFO(t, "mcp.json")
	dir := filepath.Dir(fifo)
	err := testenv.Unblocked(t, fifo, func() error { _, err := Write(fifo, Cursor, server, now); return err })
	if !errors.Is(err, inputfile.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
		t.Errorf("err %v, want one naming %s as not a regular file", err, fifo)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", err)
	}

	t.Chdir(dir)
	w, err := Write("settings.json", Gemini, server, now)
	if err != nil || w.File != "settings.json" {
		t.Fatalf("%+v, %v", w, err)
	}
	want, _ := Snippet(Gemini, server)
	if got, err := os.ReadFile(filepath.Join(dir, "settings.json")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("relative path: %q, %v", got, err)
	}
}
