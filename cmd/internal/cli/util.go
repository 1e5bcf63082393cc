package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// SortedKeys returns the keys of m in ascending order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteJSON writes v as 2-space indented JSON followed by a newline, with
// no HTML escaping: the --json output of every command.
//
// It writes past the terminal filter of TerminalSafe: JSON escapes C0
// controls itself, and --json output to a pipe or file stays byte-exact.
// encoding/json leaves the C1 controls U+0080..U+009F as they are, which
// terminals that decode UTF-8 obey (U+009B is CSI): on a terminal they are
// written as \u0080..\u009f escapes, the same JSON value.
func WriteJSON(w io.Writer, v any) error {
	raw := rawWriter(w)
	if raw == w {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := raw.Write(escapeC1(buf.Bytes()))
	return err
}

// escapeC1 rewrites every C1 control (U+0080..U+009F, the bytes C2 80 to
// C2 9F in the valid UTF-8 encoding/json writes) as a \u00XX escape. C1
// controls appear only inside JSON strings, where the escape is the same
// character.
func escapeC1(b []byte) []byte {
	if !bytes.Contains(b, []byte{0xc2}) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); i++ {
		if b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f {
			out = fmt.Appendf(out, `\u%04x`, b[i+1])
			i++
			continue
		}
		out = append(out, b[i])
	}
	return out
}
