package main

import (
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// scriptCmds are the commands the scripts have beside testscript's own.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"strict-check": strictCheck,
	"jsonget":      jsonGet,
}

// strictCheck is `strict-check FORMAT SUBSET.json TOOLS.json`: TOOLS.json
// (the output of toolbox schema --format FORMAT) must be valid against the
// JSON Schema of what that API's strict mode accepts (testdata/strict),
// and, for openai, every object must list all its properties in required
// (which JSON Schema cannot say). It prints how many tools it checked.
func strictCheck(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 || (args[0] != "openai" && args[0] != "anthropic") {
		ts.Fatalf("usage: strict-check openai|anthropic SUBSET.json TOOLS.json")
	}
	err := checkStrict(args[0], ts.MkAbs(args[1]), ts.MkAbs(args[2]))
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s", err)
	case err == nil && neg:
		ts.Fatalf("%s is valid in %s strict mode", args[2], args[0])
	case err != nil:
		ts.Logf("refused, as it should be: %s", err)
	}
}

func checkStrict(format, subsetPath, toolsPath string) error {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	sch, err := c.Compile(subsetPath)
	if err != nil {
		return fmt.Errorf("compiling %s: %v", subsetPath, err)
	}
	f, err := os.Open(toolsPath)
	if err != nil {
		return err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return fmt.Errorf("%s: %v", toolsPath, err)
	}
	if err := sch.Validate(doc); err != nil {
		return fmt.Errorf("%s is not in %s strict mode's subset:\n%v", toolsPath, format, err)
	}
	if format == "openai" {
		for _, t := range doc.([]any) {
			fn := t.(map[string]any)["function"].(map[string]any)
			if err := allRequired(fn["parameters"], fn["name"].(string)); err != nil {
				return err
			}
		}
	}
	return nil
}

// allRequired checks that every object schema in s lists all its
// properties in required (OpenAI strict mode).
func allRequired(s any, at string) error {
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	if props, ok := m["properties"].(map[string]any); ok {
		var names, req []string
		for n := range props {
			names = append(names, n)
		}
		for _, r := range m["required"].([]any) {
			req = append(req, r.(string))
		}
		sort.Strings(names)
		sort.Strings(req)
		if !slices.Equal(names, req) {
			return fmt.Errorf("%s: properties %q but required %q: OpenAI strict mode wants every property required", at, names, req)
		}
		for _, n := range names {
			if err := allRequired(props[n], at+"."+n); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"items"} {
		if err := allRequired(m[k], at+"[]"); err != nil {
			return err
		}
	}
	if alts, ok := m["anyOf"].([]any); ok {
		for i, a := range alts {
			if err := allRequired(a, fmt.Sprintf("%s|%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
