package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// writeEnvelope writes env as WriteJSON would (two-space indent, no HTML
// escaping), except that its big parts (result, events, lines) come last
// and are encoded one at a time: the result of a call may hold the whole
// output budget, and encoding it at once kept two more copies of it.
func writeEnvelope(w io.Writer, env envelope) error {
	result, events, lines := env.Result, env.Events, env.Lines
	env.Result, env.Events, env.Lines = nil, nil, nil
	head, err := indentJSON(env, "")
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.Write(bytes.TrimSuffix(head, []byte("\n}"))) // reopened for the parts below
	if result != nil {
		bw.WriteString(",\n  \"result\": ")
		if err := writeJSONString(bw, *result); err != nil {
			return err
		}
	}
	if err := writeArray(bw, "events", events); err != nil {
		return err
	}
	if err := writeArray(bw, "lines", lines); err != nil {
		return err
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// writeArray writes `,"key": [items]` at the envelope's indent, one item
// encoded at a time; nothing when there are no items (omitempty).
func writeArray[T any](bw *bufio.Writer, key string, items []T) error {
	if len(items) == 0 {
		return nil
	}
	bw.WriteString(",\n  \"" + key + "\": [")
	for i, item := range items {
		b, err := indentJSON(item, "    ")
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(b)
	}
	bw.WriteString("\n  ]")
	return nil
}

// indentJSON is v's JSON as WriteJSON indents it, each line after the first
// prefixed with prefix, without the final newline.
func indentJSON(v any, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent(prefix, "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSONString writes s as a JSON string exactly as encoding/json does
// (HTML not escaped), in pieces of 64 KiB cut before a UTF-8 lead byte, so
// that encoding a result of many megabytes holds no copy of it.
func writeJSONString(w *bufio.Writer, s string) error {
	const piece = 64 << 10
	w.WriteByte('"')
	for len(s) > 0 {
		end := min(len(s), piece)
		for i := 0; end < len(s) && i < utf8.UTFMax-1 && !utf8.RuneStart(s[end]); i++ {
			end--
		}
		b, err := indentJSON(s[:end], "")
		if err != nil {
			return err
		}
		w.Write(b[1 : len(b)-1])
		s = s[end:]
	}
	return w.WriteByte('"')
}
