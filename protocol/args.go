package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ArgError is one problem with the argument values of a call: Arg names the
// argument ("" when the problem is with the whole JSON object) and Problem
// says what is wrong and how to fix it. DecodeArgs, ValidateArgs and Encode
// report caller mistakes with it, so errors.As(err, new(*ArgError)) tells a
// bad call from a failure of the toolbox.
type ArgError struct {
	Arg     string
	Problem string
}

func (e *ArgError) Error() string {
	if e.Arg == "" {
		return "arguments: " + e.Problem
	}
	return fmt.Sprintf("argument %q: %s", e.Arg, e.Problem)
}

// ArgErrors is every problem ValidateArgs found, in declaration order, then
// unknown keys sorted by name. errors.As finds each *ArgError in it.
type ArgErrors []*ArgError

func (es ArgErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.As and errors.Is look at each *ArgError.
func (es ArgErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// DecodeArgs parses the caller's argument values: exactly one JSON object,
// numbers kept as json.Number (their text is what the tool receives). An
// empty input, null, an array, a scalar, a key given twice or anything after
// the object is an *ArgError with Arg "" (or the repeated key): pass {} for
// no arguments.
func DecodeArgs(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return nil, &ArgError{Problem: "empty input; pass a JSON object, {} for no arguments"}
	case err != nil:
		return nil, &ArgError{Problem: "not JSON: " + syntaxError(err).Error()}
	case tok != json.Delim('{'):
		return nil, &ArgError{Problem: fmt.Sprintf("got %s; pass a JSON object such as {\"name\": \"value\"}", tokenKind(tok))}
	}
	// Inside the object, the end of the input is always premature.
	notJSON := func(err error) error {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return &ArgError{Problem: "not JSON: " + syntaxError(err).Error()}
	}
	values := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notJSON(err)
		}
		key, _ := tok.(string) // object keys are always strings
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, notJSON(err)
		}
		if _, dup := values[key]; dup {
			return nil, &ArgError{Arg: key, Problem: "given twice; give each argument once"}
		}
		values[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, notJSON(err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		at := end + int64(len(data[end:])-len(bytes.TrimLeft(data[end:], " \t\r\n")))
		return nil, &ArgError{Problem: fmt.Sprintf("unexpected data at byte %d, after the JSON object; pass exactly one object", at)}
	}
	return values, nil
}

// tokenKind names the JSON type a first token starts.
func tokenKind(tok json.Token) string {
	if tok == json.Delim('[') {
		return "an array"
	}
	return jsonKind(tok)
}

// ValidateArgs checks values against the declared args before anything
// runs. It reports every problem as ArgErrors (nil when there is none):
//   - a key no arg declares (the message lists the valid names);
//   - a missing or null arg whose arity is not "optional" (null counts as
//     absent, for optional args too);
//   - an object or an array;
//   - a value the backing type refuses (see below);
//   - a NUL byte in a value passed in argv or the environment, which exec
//     cannot carry.
//
// Backing types (DESIGN.md §2): "integer" takes a JSON number whose value
// is whole and within int64 (12, 12.0, 1.2e1), or a string holding one
// ("12", as agents-exe accepts: models quote numbers), the tool getting its
// canonical text ("12"); "number" takes any JSON number, or a string that
// is one ("0.5"); "boolean" takes true and false, or the strings "true" and
// "false"; "string", and any other backing type, takes a string, or a
// number or boolean passed as its JSON text. A string that does not parse
// as the declared type exactly (" 12", "twelve", "yes") is refused, naming
// the fix. It uses no JSON Schema: it runs on every call and costs
// microseconds.
func ValidateArgs(args []Arg, values map[string]any) error {
	var errs ArgErrors
	for _, a := range args {
		v, ok := values[a.Name]
		if !ok || v == nil {
			if a.Arity != ArityOptional {
				what := "missing"
				if ok {
					what = "null"
				}
				errs = append(errs, &ArgError{Arg: a.Name, Problem: fmt.Sprintf("%s; it is required: pass %q: %s", what, a.Name, example(a))})
			}
			continue
		}
		if _, problem := renderValue(a, v); problem != "" {
			errs = append(errs, &ArgError{Arg: a.Name, Problem: problem})
		}
	}
	if hasUnknown(args, values) {
		errs = append(errs, unknownArgs(args, values)...)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func hasUnknown(args []Arg, values map[string]any) bool {
	for k := range values {
		if !declared(args, k) {
			return true
		}
	}
	return false
}

func declared(args []Arg, name string) bool {
	for _, a := range args {
		if a.Name == name {
			return true
		}
	}
	return false
}

// unknownArgs reports the keys of values that no arg declares, sorted.
func unknownArgs(args []Arg, values map[string]any) []*ArgError {
	var unknown []string
	for k := range values {
		if !declared(args, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.Name
	}
	var out []*ArgError
	for _, k := range unknown {
		p := "unknown argument; this tool takes no arguments: pass {}"
		if len(names) > 0 {
			p = "unknown argument; valid arguments: " + strings.Join(names, ", ")
			if s := closest(k, names); s != "" {
				p = fmt.Sprintf("unknown argument (did you mean %q?); valid arguments: %s", s, strings.Join(names, ", "))
			}
		}
		out = append(out, &ArgError{Arg: k, Problem: p})
	}
	return out
}

// closest returns the name nearest to k (the first on ties) when it is a
// plausible typo: at most 2 edits, and fewer than half the longer name.
func closest(k string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := editDistance(k, n)
		if d < bestD && 2*d < max(len([]rune(k)), len([]rune(n))) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// backing returns the backing type validation and InputSchema use: one of
// the four Backing* constants, BackingString for anything unknown.
func backing(bt string) string {
	switch bt {
	case BackingInteger, BackingNumber, BackingBoolean:
		return bt
	}
	return BackingString
}

// example is a JSON value of a's backing type for messages.
func example(a Arg) string {
	switch backing(a.BackingType) {
	case BackingInteger:
		return "a whole number such as 12"
	case BackingNumber:
		return "a number such as 1.5"
	case BackingBoolean:
		return "true or false"
	}
	return "a string"
}

// renderValue checks one present, non-null value against a's backing type
// and returns the text the tool receives, or a problem saying why not.
func renderValue(a Arg, v any) (text, problem string) {
	switch backing(a.BackingType) {
	case BackingInteger:
		text, problem = renderInteger(v)
	case BackingNumber:
		text, problem = renderNumber(v)
	case BackingBoolean:
		text, problem = renderBoolean(v)
	default:
		text, problem = renderString(v)
	}
	if problem == "" && a.Mode != ModeStdin && strings.IndexByte(text, 0) >= 0 {
		problem = fmt.Sprintf("contains a NUL byte, which %s mode cannot pass (argv and environment strings end at NUL); remove it", a.Mode)
	}
	return text, problem
}

func renderInteger(v any) (string, string) {
	want := "pass a whole number such as 12"
	switch v := v.(type) {
	case json.Number:
		text, why := integerText(v.String())
		switch why {
		case intOK:
			return text, ""
		case intFraction:
			return "", fmt.Sprintf("got %s, which is not whole; %s", truncate(v.String(), 40), want)
		case intRange:
			return "", fmt.Sprintf("got %s; pass a whole number between %d and %d", truncate(v.String(), 40), math.MinInt64, math.MaxInt64)
		}
		return "", fmt.Sprintf("got %q, which is not a JSON number; %s", truncate(v.String(), 40), want)
	case float64:
		return floatInteger(v, want)
	case float32:
		return floatInteger(float64(v), want)
	case string:
		// A numeric string is what agents-exe passes on (issue 12 E): the
		// model quoted the number. It is accepted when it is a whole JSON
		// number as it stands, and the tool gets its canonical text.
		switch text, why := integerText(v); why {
		case intOK:
			return text, ""
		case intFraction:
			return "", fmt.Sprintf("got the string %q, which is not whole; %s", truncate(v, 40), want)
		case intRange:
			return "", fmt.Sprintf("got the string %q; pass a whole number between %d and %d", truncate(v, 40), math.MinInt64, math.MaxInt64)
		}
		if text, why := integerText(strings.TrimSpace(v)); why == intOK {
			return "", fmt.Sprintf("got the string %q; pass the number without spaces: %s", truncate(v, 40), text)
		}
		return "", fmt.Sprintf("got the string %q; %s", truncate(v, 40), want)
	}
	if text, ok := goInteger(v); ok {
		return text, ""
	}
	return "", fmt.Sprintf("got %s; %s", jsonKind(v), want)
}

func floatInteger(f float64, want string) (string, string) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return "", fmt.Sprintf("got %v, which is not whole; %s", f, want)
	}
	if f < -(1<<63) || f >= 1<<63 {
		return "", fmt.Sprintf("got %v; pass a whole number between %d and %d", f, math.MinInt64, math.MaxInt64)
	}
	return strconv.FormatInt(int64(f), 10), ""
}

// goInteger renders Go integer types (values built by Go callers).
func goInteger(v any) (string, bool) {
	switch v := v.(type) {
	case int:
		return strconv.FormatInt(int64(v), 10), true
	case int8:
		return strconv.FormatInt(int64(v), 10), true
	case int16:
		return strconv.FormatInt(int64(v), 10), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint:
		return strconv.FormatUint(uint64(v), 10), true
	case uint8:
		return strconv.FormatUint(uint64(v), 10), true
	case uint16:
		return strconv.FormatUint(uint64(v), 10), true
	case uint32:
		return strconv.FormatUint(uint64(v), 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	}
	return "", false
}

// numberText renders any JSON number as its JSON text: a json.Number keeps
// its own text; a float64 is written as encoding/json writes it.
func numberText(v any) (string, bool, string) {
	switch v := v.(type) {
	case json.Number:
		if !isJSONNumber(v.String()) {
			return "", true, fmt.Sprintf("got %q, which is not a JSON number", truncate(v.String(), 40))
		}
		return v.String(), true, ""
	case float64, float32:
		b, err := json.Marshal(v)
		if err != nil {
			return "", true, fmt.Sprintf("got %v, which JSON cannot represent", v)
		}
		return string(b), true, ""
	}
	text, ok := goInteger(v)
	return text, ok, ""
}

func renderNumber(v any) (string, string) {
	if text, ok, problem := numberText(v); ok {
		return text, problem
	}
	if s, ok := v.(string); ok {
		if isJSONNumber(s) {
			return s, "" // a quoted number, passed on as agents-exe does
		}
		if isJSONNumber(strings.TrimSpace(s)) {
			return "", fmt.Sprintf("got the string %q; pass the number without spaces: %s", truncate(s, 40), strings.TrimSpace(s))
		}
		return "", fmt.Sprintf("got the string %q; pass a number such as 1.5", truncate(s, 40))
	}
	return "", fmt.Sprintf("got %s; pass a number such as 1.5", jsonKind(v))
}

func renderBoolean(v any) (string, string) {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v), ""
	case string:
		if v == "true" || v == "false" {
			return v, "" // a quoted boolean, passed on as agents-exe does
		}
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return "", fmt.Sprintf("got the string %q; pass %t", truncate(v, 40), b)
		}
		return "", fmt.Sprintf("got the string %q; pass true or false", truncate(v, 40))
	}
	return "", fmt.Sprintf("got %s; pass true or false", jsonKind(v))
}

// renderString passes strings as they are and numbers and booleans as their
// JSON text (DESIGN.md §2: the model sends numbers for string-typed args).
func renderString(v any) (string, string) {
	switch v := v.(type) {
	case string:
		return v, ""
	case bool:
		return strconv.FormatBool(v), ""
	}
	if text, ok, problem := numberText(v); ok {
		return text, problem
	}
	return "", fmt.Sprintf("got %s; pass a string", jsonKind(v))
}
