package mcpconfig

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// tomlServersKey is the table of Codex's MCP servers.
const tomlServersKey = "mcp_servers"

// mergeTOML replaces (or appends) the table [mcp_servers.NAME] of the TOML
// document existing, and its sub-tables, editing lines: everything else
// stays byte for byte.
func mergeTOML(existing []byte, s Server) ([]byte, error) {
	table := tomlTable(s)
	doc, err := scanTOML(string(existing))
	if err != nil {
		return nil, err
	}
	own := []string{tomlServersKey, s.Name}
	// The entry must be a table of its own, in [table] form, to be
	// replaced by lines; refuse the other ways TOML can define it.
	for _, h := range doc.headers {
		if hasPrefix(h.path, own) && h.array || slices.Equal(h.path, []string{tomlServersKey}) && h.array {
			return nil, &ParseError{Line: h.line, Reason: fmt.Sprintf("%s is an array of tables; toolbox replaces only a [%s] table", strings.Join(h.path, "."), strings.Join(own, "."))}
		}
	}
	for _, kv := range doc.keys {
		full := append(slices.Clone(kv.table), kv.key...)
		inline := slices.Equal(full, []string{tomlServersKey}) || hasPrefix(full, own) && !hasPrefix(kv.table, own)
		if inline {
			return nil, &ParseError{Line: kv.line, Reason: fmt.Sprintf("%s is defined by a key = value line; toolbox replaces only a [%s] table: edit the file by hand", strings.Join(full, "."), strings.Join(own, "."))}
		}
	}
	lines := strings.SplitAfter(string(existing), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	// Spans of the entry's tables: from a header to the line before the
	// next header, less the blank and comment lines that lead into it.
	var drop []span
	for i, h := range doc.headers {
		if !hasPrefix(h.path, own) {
			continue
		}
		end := len(lines)
		if i+1 < len(doc.headers) {
			end = doc.headers[i+1].line - 1
		}
		for end > h.line && isBlankOrComment(lines[end-1]) {
			end--
		}
		// A sub-table right after the entry's table joins its span, with
		// the blank and comment lines between them.
		if n := len(drop); n > 0 && allBlankOrComment(lines[drop[n-1].to:h.line-1]) {
			drop[n-1].to = end
			continue
		}
		drop = append(drop, span{h.line - 1, end})
	}
	var out strings.Builder
	if len(drop) == 0 {
		body := strings.Join(lines, "")
		out.WriteString(body)
		if body != "" {
			if !strings.HasSuffix(body, "\n") {
				out.WriteString("\n")
			}
			out.WriteString("\n")
		}
		out.WriteString(table)
	} else {
		for i := 0; i < len(lines); i++ {
			if j := slices.IndexFunc(drop, func(d span) bool { return d.from == i }); j >= 0 {
				if j == 0 {
					out.WriteString(table)
				}
				i = drop[j].to - 1
				continue
			}
			out.WriteString(lines[i])
		}
	}
	merged := out.String()
	if _, err := scanTOML(merged); err != nil {
		return nil, fmt.Errorf("merging the entry made a file that does not read back (%v); edit the file by hand", err)
	}
	return []byte(merged), nil
}

type span struct{ from, to int } // line indexes, to exclusive

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

func allBlankOrComment(lines []string) bool {
	return !slices.ContainsFunc(lines, func(l string) bool { return !isBlankOrComment(l) })
}

func isBlankOrComment(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}

// tomlTable is the entry as a Codex table, ending in a newline.
func tomlTable(s Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s.%s]\n", tomlServersKey, s.Name)
	fmt.Fprintf(&b, "command = %s\n", tomlString(s.Command))
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		args[i] = tomlString(a)
	}
	fmt.Fprintf(&b, "args = [%s]\n", strings.Join(args, ", "))
	return b.String()
}

// tomlString is s as a TOML basic string (s is valid UTF-8).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlDoc is the structure scanTOML found: table headers and the keys set
// by key = value lines, in order.
type tomlDoc struct {
	headers []tomlHeader
	keys    []tomlKey
}

type tomlHeader struct {
	line  int // 1-based
	path  []string
	array bool // [[path]]
}

type tomlKey struct {
	line  int
	table []string // the table the line is in
	key   []string // its dotted key
}

// scanTOML reads the structure of a TOML document: comments, table
// headers, key = value lines whose values are strings (all four kinds),
// arrays, inline tables or scalars. It checks that strings end, brackets
// match and every line is one of those; it does not check each scalar's
// syntax, nor that a key is defined once. A document it cannot follow is a
// *ParseError naming the line.
func scanTOML(src string) (*tomlDoc, error) {
	sc := &tomlScanner{src: src, line: 1}
	doc := &tomlDoc{}
	var table []string
	for {
		sc.skipSpace(true)
		if sc.eof() {
			return doc, nil
		}
		line := sc.line
		if sc.peek() == '[' {
			sc.pos++
			array := sc.peek() == '['
			if array {
				sc.pos++
			}
			sc.skipSpace(false)
			path, err := sc.key()
			if err != nil {
				return nil, err
			}
			sc.skipSpace(false)
			if !sc.consume("]") || array && !sc.consume("]") {
				return nil, sc.fail("a table header does not end in ]")
			}
			doc.headers = append(doc.headers, tomlHeader{line: line, path: path, array: array})
			table = path
		} else {
			key, err := sc.key()
			if err != nil {
				return nil, err
			}
			sc.skipSpace(false)
			if !sc.consume("=") {
				return nil, sc.fail("expected = after the key")
			}
			sc.skipSpace(false)
			if err := sc.value(); err != nil {
				return nil, err
			}
			doc.keys = append(doc.keys, tomlKey{line: line, table: table, key: key})
		}
		sc.skipSpace(false)
		if !sc.eof() && sc.peek() != '\n' && !strings.HasPrefix(sc.src[sc.pos:], "\r\n") {
			return nil, sc.fail("unexpected text after the value")
		}
	}
}

type tomlScanner struct {
	src  string
	pos  int
	line int
}

func (s *tomlScanner) eof() bool { return s.pos >= len(s.src) }

// peek is the byte at pos, 0 at the end: a file may end anywhere (after
// "[", inside a string).
func (s *tomlScanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.pos]
}

func (s *tomlScanner) fail(reason string) *ParseError {
	return &ParseError{Line: s.line, Reason: reason + " (toolbox reads TOML tables, keys, strings, arrays and inline tables)"}
}

func (s *tomlScanner) consume(lit string) bool {
	if strings.HasPrefix(s.src[s.pos:], lit) {
		s.pos += len(lit)
		return true
	}
	return false
}

// skipSpace skips spaces, tabs and a comment; with newlines, line ends
// and the blank or comment lines after them too.
func (s *tomlScanner) skipSpace(newlines bool) {
	for !s.eof() {
		switch c := s.peek(); {
		case c == ' ' || c == '\t':
			s.pos++
		case c == '#':
			for !s.eof() && s.peek() != '\n' {
				s.pos++
			}
		case newlines && c == '\n':
			s.pos++
			s.line++
		case newlines && c == '\r' && s.consume("\r\n"):
			s.line++
		default:
			return
		}
	}
}

var bareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+`) })

// key reads a dotted key: bare or quoted parts, spaces around the dots.
func (s *tomlScanner) key() ([]string, error) {
	var path []string
	for {
		if s.eof() {
			return nil, s.fail("expected a key")
		}
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			start := s.pos
			if err := s.str(false); err != nil {
				return nil, err
			}
			raw := s.src[start+1 : s.pos-1]
			if c == '"' {
				raw = unescapeBasic(raw)
			}
			path = append(path, raw)
		default:
			m := bareKey().FindString(s.src[s.pos:])
			if m == "" {
				return nil, s.fail("expected a key")
			}
			s.pos += len(m)
			path = append(path, m)
		}
		s.skipSpace(false)
		if !s.consume(".") {
			return path, nil
		}
		s.skipSpace(false)
	}
}

// unescapeBasic undoes the escapes of a basic string well enough to
// compare keys: \" and \\ (a key needing others is unusual).
func unescapeBasic(raw string) string {
	return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(raw)
}

// scalar matches booleans, numbers and dates loosely (their characters,
// not their syntax); a date and a time may be separated by a space.
var scalar = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(true|false|[+-]?(inf|nan)|[0-9]{4}-[0-9]{2}-[0-9]{2}[ Tt][0-9]{2}:[0-9:.+Zz-]*|[+-]?[0-9][0-9A-Za-z_:.+-]*)`)
})

// value reads one value.
func (s *tomlScanner) value() error {
	if s.eof() {
		return s.fail("expected a value")
	}
	switch s.peek() {
	case '"', '\'':
		return s.str(true)
	case '[':
		s.pos++
		for {
			s.skipSpace(true)
			if s.consume("]") {
				return nil
			}
			if err := s.value(); err != nil {
				return err
			}
			s.skipSpace(true)
			if s.consume("]") {
				return nil
			}
			if !s.consume(",") {
				return s.fail("expected , or ] in an array")
			}
		}
	case '{':
		s.pos++
		for {
			s.skipSpace(true)
			if s.consume("}") {
				return nil
			}
			if _, err := s.key(); err != nil {
				return err
			}
			s.skipSpace(false)
			if !s.consume("=") {
				return s.fail("expected = in an inline table")
			}
			s.skipSpace(false)
			if err := s.value(); err != nil {
				return err
			}
			s.skipSpace(true)
			if s.consume("}") {
				return nil
			}
			if !s.consume(",") {
				return s.fail("expected , or } in an inline table")
			}
		}
	}
	m := scalar().FindString(s.src[s.pos:])
	if m == "" {
		return s.fail("expected a value")
	}
	s.pos += len(m)
	return nil
}

// str reads a string of any of TOML's four kinds; multi-line ones only
// where multi is true (values, not keys).
func (s *tomlScanner) str(multi bool) error {
	q := s.src[s.pos : s.pos+1]
	if multi && strings.HasPrefix(s.src[s.pos:], q+q+q) {
		start := s.line
		s.pos += 3
		for !s.eof() {
			if q == `"` && s.peek() == '\\' {
				s.pos = min(s.pos+2, len(s.src)) // an escape may end the file
				continue
			}
			if s.consume(q + q + q) {
				// Up to two more quotes belong to the content.
				for i := 0; i < 2 && s.consume(q); i++ {
				}
				return nil
			}
			if s.peek() == '\n' {
				s.line++
			}
			s.pos++
		}
		s.line = start
		return s.fail("a multi-line string does not end")
	}
	s.pos++
	for !s.eof() {
		switch c := s.peek(); {
		case c == '\n':
			return s.fail("a string does not end on its line")
		case q == `"` && c == '\\':
			s.pos = min(s.pos+2, len(s.src)) // an escape may end the file
		case c == q[0]:
			s.pos++
			return nil
		default:
			s.pos++
		}
	}
	return s.fail("a string does not end")
}
