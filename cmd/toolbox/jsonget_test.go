package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// jsonGet is the scripts' `jsonget FILE STEP... -- KEY...`: it walks the
// JSON document in FILE by the steps (an object key, an array index, or
// KEY=VALUE for the element of an array whose string field KEY is VALUE)
// and prints, for each KEY of the object reached, a line `KEY VALUE` with
// the value as compact JSON, so that a script can compare chosen fields
// exactly (cmpenv) where the whole document holds machine-specific ones.
func jsonGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! jsonget")
	}
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if len(args) < 3 || sep < 1 || sep == len(args)-1 {
		ts.Fatalf("usage: jsonget FILE STEP... -- KEY...")
	}
	var doc any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &doc))
	v, err := walkJSON(doc, args[1:sep])
	ts.Check(err)
	obj, ok := v.(map[string]any)
	if !ok {
		ts.Fatalf("%s: not an object", strings.Join(args[1:sep], " "))
	}
	var out strings.Builder
	for _, k := range args[sep+1:] {
		val, ok := obj[k]
		if !ok {
			ts.Fatalf("no key %q in %s", k, strings.Join(args[1:sep], " "))
		}
		b, err := json.Marshal(val)
		ts.Check(err)
		fmt.Fprintf(&out, "%s %s\n", k, b)
	}
	_, err = ts.Stdout().Write([]byte(out.String()))
	ts.Check(err)
}

func walkJSON(v any, steps []string) (any, error) {
	for _, s := range steps {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[s]
			if !ok {
				return nil, fmt.Errorf("no key %q", s)
			}
			v = next
		case []any:
			if k, want, ok := strings.Cut(s, "="); ok {
				found := false
				for _, e := range x {
					if m, ok := e.(map[string]any); ok && m[k] == want {
						v, found = e, true
						break
					}
				}
				if !found {
					return nil, fmt.Errorf("no element with %s", s)
				}
				continue
			}
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no element %q in an array of %d", s, len(x))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("step %q: not an object or array", s)
		}
	}
	return v, nil
}
