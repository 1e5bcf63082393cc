package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// TestReadTokenFileRefusesAFIFO: a token file that is a FIFO of mode 0600
// (no writer ever comes) is refused at once as not a regular file, not
// waited on by serve's start; its positive twin, a regular file of mode
// 0600, is read.
func TestReadTokenFileRefusesAFIFO(t *testing.T) {
	fifo := testenv.FIFO(t, "token")
	dir := filepath.Dir(fifo)
	err := testenv.Unblocked(t, fifo, func() error { _, err := ReadTokenFile(fifo); return err })
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO token file: %v, want a refusal saying not a regular file", err)
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
