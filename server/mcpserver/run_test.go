package mcpserver

import (
	"reflect"
	"strings"
	"testing"
)

// TestLineWriter: lines split across writes come out whole, blank lines
// are skipped, and a line longer than maxProgressText is cut once.
func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{emit: func(s string) { got = append(got, s) }}
	long := strings.Repeat("x", maxProgressText+10)
	for _, chunk := range []string{`{"a":`, "1}\n\n  \n{\"b\"", ":2}\n" + long[:100], long[100:] + "\nend\n"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(chunk))
		}
	}
	want := []string{`{"a":1}`, `{"b":2}`, long[:maxProgressText], "end"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
}
