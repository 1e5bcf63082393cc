package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// endless is a stdin that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestReadArgsBounded: --args - stops reading stdin at MaxArgsBytes and
// refuses it (it read a stream that never ends until memory ran out);
// arguments within the limit are read whole.
func TestReadArgsBounded(t *testing.T) {
	c := &CallInput{Args: "-"}
	_, err := c.readArgs(endless{})
	var tl *inputfile.TooLargeError
	if !errors.As(err, &tl) || tl.Max != MaxArgsBytes {
		t.Fatalf("readArgs(endless stdin) = %v, want a *TooLargeError at %d bytes", err, MaxArgsBytes)
	}
	var in io.Reader = strings.NewReader(`{"a": 1}`)
	if b, err := c.readArgs(in); err != nil || string(b) != `{"a": 1}` {
		t.Errorf("readArgs = %q, %v", b, err)
	}
}

// TestWriteJSONStringAsEncodingJSON: the result string written in pieces
// is byte for byte what encoding/json writes, across every piece boundary.
func TestWriteJSONStringAsEncodingJSON(t *testing.T) {
	var b strings.Builder
	for i := range 200_000 {
		b.WriteString([]string{"a", "é", "\x00", "\n", `"`, "\\", "\u2028", "\xff", "€", "<&>", "\xe2\x82"}[i%11])
	}
	s := b.String()
	var got bytes.Buffer
	bw := bufio.NewWriter(&got)
	if err := writeJSONString(bw, s); err != nil {
		t.Fatal(err)
	}
	bw.Flush()
	want, err := indentJSON(s, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("writeJSONString differs from encoding/json (%d vs %d bytes)", got.Len(), len(want))
	}
}
