package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// jsonEdit is the scripts' `jsonedit FILE set PATH JSON` and `jsonedit
// FILE del PATH`: it rewrites one value of a JSON file (a lock, say) the
// way a hand or a tool would, bypassing every check, so that a script can
// show what toolbox does with a tampered file. PATH is dot-separated keys.
func jsonEdit() int {
	if err := editJSON(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "jsonedit:", err)
		return 1
	}
	return 0
}

func editJSON(args []string) error {
	if len(args) < 3 || (args[1] == "set") != (len(args) == 4) {
		return fmt.Errorf("usage: jsonedit FILE set PATH JSON | jsonedit FILE del PATH")
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	keys := strings.Split(args[2], ".")
	m := doc
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: no object at %q", args[2], k)
		}
		m = next
	}
	last := keys[len(keys)-1]
	switch args[1] {
	case "set":
		var v any
		if err := json.Unmarshal([]byte(args[3]), &v); err != nil {
			return fmt.Errorf("value %q: %w", args[3], err)
		}
		m[last] = v
	case "del":
		if _, ok := m[last]; !ok {
			return fmt.Errorf("%s: no such key", args[2])
		}
		delete(m, last)
	default:
		return fmt.Errorf("unknown edit %q", args[1])
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(args[0], append(out, '\n'), 0o644)
}
