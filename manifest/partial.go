package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// ReadCall reads the part of the lock at path that one call needs, so that
// the cost of `toolbox run` does not grow with the rest of the toolbox (a
// run of one command of a binary of 1000 commands decoded all 1000). It
// keeps the top-level fields, every capability whose name match accepts
// with all its backends, every tool whose name match accepts, the tools
// named in extra (--backend overrides), the binaries of the tools kept,
// and every tool of the MCP servers of the tools kept (a call verifies a
// server's whole listing); that part is decoded and validated exactly as Read does (unknown
// keys, version, consistency). The other entries of "tools", "binaries"
// and "capabilities" are skipped unread but for their strings and
// brackets, which must balance. Errors are Read's.
//
// match is given lock names (a tool, "tool.command" or a capability); a
// caller that accepts model names as well passes a match that maps them.
func ReadCall(path string, match func(name string) bool, extra []string) (*Lock, error) {
	data, err := inputfile.ReadFile(path, MaxLockBytes)
	if err != nil {
		return nil, fmt.Errorf("reading lock: %w", err)
	}
	part, otherPaths, ok := selectCall(data, match, extra)
	if !ok {
		part = data // not an object of objects: Unmarshal says what is wrong
	}
	l, err := unmarshal(part, ok)
	if err != nil {
		return nil, fmt.Errorf("reading lock %q: %w", path, err)
	}
	if ok {
		l.OtherPaths = otherPaths
	}
	return l, nil
}

// selectCall rewrites the lock data keeping only the entries ReadCall
// keeps, and returns the binary paths of the tools and binaries it left
// out (Lock.OtherPaths). ok is false when data is not a JSON object whose
// "tools", "binaries" and "capabilities" are objects.
func selectCall(data []byte, match func(string) bool, extra []string) (part []byte, other []string, ok bool) {
	var top []member
	sections := map[string][]member{}
	end := object(data, skipSpace(data, 0), func(key string, j int) int {
		var vend int
		switch key {
		case "tools", "binaries", "capabilities":
			// Split in the same pass: each byte of the lock is scanned once.
			vend = object(data, j, func(k string, v int) int {
				e := skipValue(data, v)
				if e >= 0 {
					sections[key] = append(sections[key], member{key: k, raw: data[v:e]})
				}
				return e
			})
		default:
			vend = skipValue(data, j)
		}
		if vend >= 0 {
			top = append(top, member{key: key, raw: data[j:vend]})
		}
		return vend
	})
	if end < 0 || skipSpace(data, end) != len(data) {
		return nil, nil, false
	}
	keepTool := map[string]bool{}
	for _, n := range extra {
		keepTool[n] = true
	}
	keepCap := map[string]bool{}
	for _, m := range sections["capabilities"] {
		if !match(m.key) {
			continue
		}
		keepCap[m.key] = true
		var c struct {
			Backends []string `json:"backends"`
		}
		_ = json.Unmarshal(m.raw, &c) // a bad entry is Unmarshal's to report
		for _, b := range c.Backends {
			keepTool[b] = true
		}
	}
	keepBinary := map[string]bool{}
	for _, m := range sections["tools"] {
		if !keepTool[m.key] && !match(m.key) {
			continue
		}
		keepTool[m.key] = true
		var ref struct {
			Binary string `json:"binary"`
		}
		if json.Unmarshal(m.raw, &ref) == nil && ref.Binary != "" {
			keepBinary[ref.Binary] = true
		}
	}
	// A tool of an MCP server comes with the server's other tools: a call
	// verifies the server's whole listing against them (their pins).
	// Each entry's server is decoded once: the second pass reuses it.
	serverOf := make([]string, len(sections["tools"]))
	servers := map[string]bool{}
	for i, m := range sections["tools"] {
		serverOf[i] = mcpServerOf(m.raw)
		if serverOf[i] != "" && keepTool[m.key] {
			servers[serverOf[i]] = true
		}
	}
	if len(servers) > 0 {
		for i, m := range sections["tools"] {
			if servers[serverOf[i]] {
				keepTool[m.key] = true
			}
		}
	}
	other = append(pathsOf(sections["tools"], keepTool), pathsOf(sections["binaries"], keepBinary)...)
	var out bytes.Buffer
	out.Grow(len(data) / 8)
	out.WriteByte('{')
	for i, m := range top {
		if i > 0 {
			out.WriteByte(',')
		}
		writeKey(&out, m.key)
		switch m.key {
		case "tools":
			writeObject(&out, sections[m.key], keepTool)
		case "binaries":
			writeObject(&out, sections[m.key], keepBinary)
		case "capabilities":
			writeObject(&out, sections[m.key], keepCap)
		default:
			out.Write(m.raw)
		}
	}
	out.WriteByte('}')
	return out.Bytes(), other, true
}

// pathsOf returns the "path" of every member keep leaves out (a tool's or
// a binary's executable; a command of a binary has none of its own).
func pathsOf(ms []member, keep map[string]bool) []string {
	var out []string
	for _, m := range ms {
		if keep[m.key] {
			continue
		}
		var p struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(m.raw, &p) == nil && p.Path != "" {
			out = append(out, p.Path)
		}
	}
	return out
}

// mcpServerOf is the server of a tools entry of kind mcp, "" for others
// (decoded only when the entry holds an "mcp" key).
func mcpServerOf(raw []byte) string {
	if !bytes.Contains(raw, []byte(`"mcp"`)) {
		return ""
	}
	var t struct {
		MCP *struct {
			Server string `json:"server"`
		} `json:"mcp"`
	}
	if json.Unmarshal(raw, &t) != nil || t.MCP == nil {
		return ""
	}
	return t.MCP.Server
}

func writeKey(b *bytes.Buffer, key string) {
	k, _ := json.Marshal(key) // a string always marshals
	b.Write(k)
	b.WriteByte(':')
}

func writeObject(b *bytes.Buffer, ms []member, keep map[string]bool) {
	b.WriteByte('{')
	n := 0
	for _, m := range ms {
		if !keep[m.key] {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		writeKey(b, m.key)
		b.Write(m.raw)
	}
	b.WriteByte('}')
}

// member is one key and its raw value in a JSON object.
type member struct {
	key string
	raw []byte
}

// object walks the JSON object starting at data[i], calling value with
// each member's key and the index where its value starts; value returns
// the index after that value, or -1. It finds keys by their strings only:
// it is a scan, far cheaper than decoding, and checks nothing else. It
// returns the index after the object, or -1 when data is not an object
// of that shape there.
func object(data []byte, i int, value func(key string, j int) int) int {
	if i >= len(data) || data[i] != '{' {
		return -1
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		end := skipString(data, i)
		if end < 0 {
			return -1
		}
		key := string(data[i+1 : end-1])
		if bytes.IndexByte(data[i:end], '\\') >= 0 && json.Unmarshal(data[i:end], &key) != nil {
			return -1
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return -1
		}
		vend := value(key, skipSpace(data, i+1))
		if vend < 0 {
			return -1
		}
		i = skipSpace(data, vend)
		switch {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		case i < len(data) && data[i] == '}':
			return i + 1
		default:
			return -1
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at data[i] (a
// '"'), or -1 when it does not end.
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at data[i],
// matching brackets and skipping strings, or -1 when it does not end or
// its brackets do not match. It is a plain loop over the bytes: a lock is
// scanned at hundreds of MB/s.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
	default:
		for ; i < len(data); i++ {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
		return i
	}
	var stack []byte
	for ; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			j := skipString(data, i)
			if j < 0 {
				return -1
			}
			i = j - 1
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return -1
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1
			}
		}
	}
	return -1
}
