//go:build unix

package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// FIFO makes a named pipe called name in a new temporary directory and
// returns its path: the input a reader that trusts a path would block on
// forever (no writer ever comes).
func FIFO(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", p, err)
	}
	return p
}

// Unblocked runs read (which may open fifo) and returns its error; when
// it has not returned within 10 s the test fails, after a writer is opened
// on fifo so that the blocked reader ends.
func Unblocked(t testing.TB, fifo string, read func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close() // let the reader go
		}
		t.Fatalf("reading %s blocked instead of refusing a FIFO", fifo)
		return nil
	}
}
