package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadTokenFileRefusesAFIFO: a token file that is a FIFO of mode 0600
// (no writer ever comes) is refused at once as not a regular file, not
// waited on by serve's start; its positive twin, a regular file of mode
// 0600, is read.
func TestReadTokenFileRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "token")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadTokenFile(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO token file: %v, want a refusal saying not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close() // let the reader go
		}
		t.Fatal("ReadTokenFile blocked on a FIFO")
	}
	regular := filepath.Join(dir, "regular")
	want := strings.Repeat("t", MinTokenBytes)
	if err := os.WriteFile(regular, []byte(want+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTokenFile(regular); err != nil || got != want {
		t.Errorf("a regular token file: %q, %v", got, err)
	}
}
