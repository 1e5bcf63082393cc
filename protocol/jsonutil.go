package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// syntaxError adds the byte offset to a JSON syntax error.
func syntaxError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%w (at byte %d)", err, se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of input")
	}
	return err
}

// jsonKind names the JSON type of a decoded value for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// truncate shortens s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// SyntaxError rewords a JSON syntax error from encoding/json with its byte
// offset; other errors are returned as they are. Shared with package
// validate so both report JSON mistakes alike.
func SyntaxError(err error) error { return syntaxError(err) }

// JSONKind names the JSON kind of a decoded value (object, array, string,
// number, boolean, null) for messages.
func JSONKind(v any) string { return jsonKind(v) }

// Truncate shortens s to at most n bytes without splitting a UTF-8
// character, marking the cut with "…".
func Truncate(s string, n int) string { return truncate(s, n) }

// decodeJSON decodes exactly one JSON value, numbers as json.Number, and
// refuses anything after it but white space. fastDecode does the work;
// what it does not take goes to encoding/json, which decides and words the
// error.
func decodeJSON(data []byte) (any, error) {
	if v, ok := fastDecode(data); ok {
		return v, nil
	}
	return stdDecodeJSON(data)
}

// stdDecodeJSON is decodeJSON by encoding/json alone: the rule fastDecode
// follows.
func stdDecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty input")
		}
		return nil, syntaxError(err)
	}
	// Only JSON white space may follow. Checked on the bytes: dec.Token
	// (which finds the same) costs a third of a small event's decoding
	// (issue 13, the stream path); it still places the error.
	if !jsonSpace(data[dec.InputOffset():]) {
		_, _ = dec.Token()
		return nil, fmt.Errorf("unexpected data after the JSON value at byte %d", dec.InputOffset())
	}
	return v, nil
}

// jsonSpace says whether b is only JSON white space (RFC 8259: space, tab,
// line feed, carriage return).
func jsonSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// DecodeJSON decodes exactly one JSON value, numbers as json.Number, and
// refuses anything after it but white space. Values are those of
// encoding/json's Decoder with UseNumber (map[string]any with a repeated
// key's last value, []any, string, json.Number, bool, nil; an invalid UTF-8
// byte or lone surrogate escape in a string reads as U+FFFD; at most 10000
// levels of nesting), and so are its errors, with the byte offset added.
// A hand-written decoder does the work (issue 13: it is every stream
// event's first step); FuzzDecodeJSON holds it to encoding/json.
func DecodeJSON(data []byte) (any, error) { return decodeJSON(data) }

func isRuneStart(b byte) bool { return utf8.RuneStart(b) }
