package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonServer is a stdio server entry as the JSON clients read it; Type is
// set for the clients whose documented form names the transport.
type jsonServer struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func jsonEntry(s Server, typed bool) jsonServer {
	e := jsonServer{Command: s.Command, Args: s.Args}
	if typed {
		e.Type = "stdio"
	}
	if e.Args == nil {
		e.Args = []string{}
	}
	return e
}

// member is one key of a JSON object and its value as written.
type member struct {
	key  string
	val  json.RawMessage
	line int // of the key, 1-based (0 for a member added here)
}

// mergeJSON sets servers[entry name] in the JSON object existing and lays
// the whole document out again, every other member kept in its order.
func mergeJSON(existing []byte, serversKey string, entry jsonServer, name string) ([]byte, error) {
	var top []member
	if len(bytes.TrimSpace(existing)) > 0 {
		var err error
		if top, err = decodeObject(existing); err != nil {
			return nil, err
		}
	}
	val, err := marshal(entry)
	if err != nil {
		return nil, err
	}
	var servers []member
	i := index(top, serversKey)
	if i >= 0 {
		if servers, err = decodeObject(top[i].val); err != nil {
			var pe *ParseError
			if errors.As(err, &pe) && pe.Reason == reasonNotObject {
				pe.Reason = fmt.Sprintf("%q is not an object", serversKey)
				pe.Line = top[i].line
			}
			return nil, err
		}
	}
	if j := index(servers, name); j >= 0 {
		servers[j].val = val
	} else {
		servers = append(servers, member{key: name, val: val})
	}
	if i >= 0 {
		top[i].val = encodeObject(servers)
	} else {
		top = append(top, member{key: serversKey, val: encodeObject(servers)})
	}
	var out bytes.Buffer
	if err := json.Indent(&out, encodeObject(top), "", "  "); err != nil {
		return nil, fmt.Errorf("laying out the merged configuration: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func index(ms []member, key string) int {
	for i, m := range ms {
		if m.key == key {
			return i
		}
	}
	return -1
}

const reasonNotObject = "not a JSON object"

// decodeObject reads the JSON object data, keeping its members in order.
// Anything else (another value, comments, trailing commas, a key twice,
// text after the object) is a *ParseError.
func decodeObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	fail := func(err error) error {
		pe := &ParseError{Line: lineAt(data, int(dec.InputOffset())), Reason: err.Error()}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset is at the bad character or just after it.
			off := int(se.Offset)
			if c := charAt(data, off); c != '/' && c != '#' && c != '}' && c != ']' {
				off--
			}
			pe.Line = lineAt(data, off)
			switch charAt(data, off) {
			case '/', '#':
				pe.Reason += " (comments are not JSON; toolbox does not rewrite a file that has them)"
			case '}', ']':
				pe.Reason += " (a trailing comma?)"
			}
		}
		return pe
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fail(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &ParseError{Line: lineAt(data, 0), Reason: reasonNotObject}
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		key, _ := tok.(string)
		line := lineAt(data, int(dec.InputOffset()))
		if index(ms, key) >= 0 {
			return nil, &ParseError{Line: line, Reason: fmt.Sprintf("key %q appears twice", key)}
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fail(err)
		}
		ms = append(ms, member{key: key, val: val, line: line})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("text after the object")
		}
		return nil, fail(err)
	}
	return ms, nil
}

// encodeObject writes members as one compact object (values as they came).
func encodeObject(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshal(m.key) // a string always encodes
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// marshal is json.Marshal without HTML escaping: paths keep their < > &.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int) int {
	off = min(max(off, 0), len(data))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func charAt(data []byte, off int) byte {
	if off < 0 || off >= len(data) {
		return 0
	}
	return data[off]
}
