package protocol

import (
	"errors"
	"fmt"
	"strings"
)

// ParseCheck parses what `TOOL check` printed on stdout:
// {"ok": bool, "detail": "...", "fix": "..."} (DESIGN.md §2). "ok" is
// required; "detail" and "fix" are optional strings; other keys are ignored,
// as in describe. The error says what is wrong with the output; it does not
// wrap a sentinel, since every failure means the same thing to the prober:
// the tool's self-test did not answer in the protocol.
func ParseCheck(data []byte) (CheckResult, error) {
	doc, err := decodeJSON(data)
	if err != nil {
		return CheckResult{}, fmt.Errorf("parsing check output: not JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return CheckResult{}, fmt.Errorf("parsing check output: want a JSON object such as {\"ok\": true}, got %s", jsonKind(doc))
	}
	var errs []string
	var res CheckResult
	switch v := obj["ok"].(type) {
	case bool:
		res.OK = v
	case nil:
		if _, present := obj["ok"]; present {
			errs = append(errs, `"ok" is null; want true or false`)
		} else {
			errs = append(errs, `missing required key "ok" (true or false)`)
		}
	default:
		errs = append(errs, fmt.Sprintf(`"ok" is %s; want true or false`, jsonKind(v)))
	}
	for _, key := range []string{"detail", "fix"} {
		v, present := obj[key]
		if !present {
			continue
		}
		s, ok := v.(string)
		if !ok {
			errs = append(errs, fmt.Sprintf("%q is %s; want a string", key, jsonKind(v)))
			continue
		}
		if key == "detail" {
			res.Detail = s
		} else {
			res.Fix = s
		}
	}
	if len(errs) > 0 {
		return CheckResult{}, errors.New("parsing check output: " + strings.Join(errs, "; "))
	}
	return res, nil
}
