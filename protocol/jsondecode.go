package protocol

import (
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// fastDecode is decodeJSON's fast path (issue 13: the stream path decodes
// every event of a jsonl stream; for a 40-byte object encoding/json took
// 2.2 µs, this 420 ns: BenchmarkDecodeJSON, DESIGN.md §7). It decodes
// exactly one JSON value surrounded by JSON white space to what
// encoding/json's Decoder with UseNumber gives: map[string]any (a repeated
// key keeps its last value), []any (never nil), string (escapes decoded,
// an invalid UTF-8 byte or a lone surrogate escape read as U+FFFD),
// json.Number (the number's text), bool and nil. ok is false when the
// input is not such a value, and also when it nests deeper than
// fastMaxDepth: the caller then asks encoding/json, so that its acceptance
// and its error messages stay the rule (FuzzDecodeJSON checks that both
// agree).
func fastDecode(data []byte) (v any, ok bool) {
	d := fastDecoder{data: data}
	if len(data) <= fastWholeString {
		d.whole = string(data)
	}
	d.skipSpace()
	v, ok = d.value()
	if !ok {
		return nil, false
	}
	d.skipSpace()
	if d.i != len(data) {
		return nil, false
	}
	return v, true
}

// fastMaxDepth bounds fastDecode's recursion; deeper input goes to
// encoding/json, which allows 10000 levels.
const fastMaxDepth = 500

// fastWholeString is the longest input whose strings and numbers are
// slices of one copy of the whole input (one allocation for all of them)
// rather than a copy each: a longer input would be copied once more than
// encoding/json copies it, which the memory bounds of DESIGN.md §5 do not
// allow for.
const fastWholeString = 4 << 10

type fastDecoder struct {
	data  []byte
	whole string // string(data) when len(data) <= fastWholeString, else ""
	i     int
	depth int
}

// text returns data[a:b] as a string.
func (d *fastDecoder) text(a, b int) string {
	if d.whole != "" {
		return d.whole[a:b]
	}
	return string(d.data[a:b])
}

func (d *fastDecoder) skipSpace() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) value() (any, bool) {
	if d.i >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *fastDecoder) literal(word string) bool {
	if len(d.data)-d.i < len(word) || string(d.data[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

// number reads a number (numberEnd); what follows is the caller's to
// check.
func (d *fastDecoder) number() (any, bool) {
	end, ok := numberEnd(d.data, d.i)
	if !ok {
		return nil, false
	}
	start := d.i
	d.i = end
	return json.Number(d.text(start, end)), true
}

// str reads a string at d.i (its opening quote).
func (d *fastDecoder) str() (string, bool) {
	b := d.data
	start := d.i + 1
	for i := start; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			return d.text(start, i), true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return d.strSlow(start, i)
		}
	}
	return "", false
}

// strSlow decodes a string with escapes or bytes from 0x80 as
// encoding/json does (its unquoteBytes): a valid UTF-16 surrogate pair of
// \u escapes is one character, a lone surrogate is U+FFFD, and so is each
// byte that does not begin a valid UTF-8 encoding. b[start:i] is plain.
func (d *fastDecoder) strSlow(start, i int) (string, bool) {
	b := d.data
	out := make([]byte, 0, i-start+16)
	out = append(out, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.i = i + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if i+1 >= len(b) {
				return "", false
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b[i+2:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if r2 := hex4(b[i+2:]); r2 >= 0 {
							if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
								out = utf8.AppendRune(out, pair)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			out = utf8.AppendRune(out, r) // U+FFFD for an invalid byte
			i += size
		}
	}
	return "", false
}

// hex4 reads four hex digits, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// enter steps into an object or array at its opening byte. ok is false
// past fastMaxDepth; empty says the closing byte followed at once (and it
// was stepped over).
func (d *fastDecoder) enter(closing byte) (empty, ok bool) {
	if d.depth++; d.depth > fastMaxDepth {
		return false, false
	}
	d.i++
	d.skipSpace()
	if d.i < len(d.data) && d.data[d.i] == closing {
		d.i++
		d.depth--
		return true, true
	}
	return false, true
}

// next steps over what follows a member or element: a comma (more) or the
// closing byte.
func (d *fastDecoder) next(closing byte) (more, ok bool) {
	d.skipSpace()
	if d.i >= len(d.data) {
		return false, false
	}
	switch d.data[d.i] {
	case ',':
		d.i++
		d.skipSpace()
		return true, true
	case closing:
		d.i++
		d.depth--
		return false, true
	}
	return false, false
}

func (d *fastDecoder) object() (any, bool) {
	m := make(map[string]any)
	if empty, ok := d.enter('}'); empty || !ok {
		return m, ok
	}
	for {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.skipSpace()
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		m[k] = v
		if more, ok := d.next('}'); !more {
			return m, ok
		}
	}
}

func (d *fastDecoder) array() (any, bool) {
	a := make([]any, 0)
	if empty, ok := d.enter(']'); empty || !ok {
		return a, ok
	}
	for {
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := d.next(']'); !more {
			return a, ok
		}
	}
}
