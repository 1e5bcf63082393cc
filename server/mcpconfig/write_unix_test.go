//go:build unix

package mcpconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// A FIFO at the client file's place is refused at once, not waited on
// (nothing ever writes to it), and stays a FIFO; a regular file at a
// relative path is written beside it, not through the system's temporary
// directory.
func TestWriteRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "mcp.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Write(fifo, Cursor, server, now)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, inputfile.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
			t.Errorf("err %v, want one naming %s as not a regular file", err, fifo)
		}
	case <-time.After(10 * time.Second):
		// Unblock the reader so the test ends.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Write blocked on a FIFO")
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
