package cli

import (
	"encoding/json"
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
// It writes past the terminal filter of TerminalSafe: JSON escapes control
// characters itself, and --json output stays byte-exact.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(rawWriter(w))
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
