package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Marshal encodes l in the canonical form of DESIGN.md §4: keys sorted at
// every level (struct fields included), two-space indent, a trailing
// newline, no HTML escaping. It does not modify l: nil Tools or
// Capabilities are written as empty objects and Builtins sorted. Equal locks
// give byte-identical output whatever order their maps were filled in.
//
// The tools of one multi-command binary (Tool.Binary) are written once:
// the binary's fields under "binaries", each command's tool as only its
// binary and its command (see binaries.go), so the size of a lock is
// linear in its tools and commands.
//
// The lock is validated first (see Lock.Validate); an invalid lock returns
// an *InvalidError and no bytes, so Marshal never produces a file that
// Unmarshal would refuse. Tools of one binary that differ in more than
// their command are invalid: the format cannot store them.
func Marshal(l *Lock) ([]byte, error) {
	if l == nil {
		return nil, errors.New("encoding lock: nil lock")
	}
	c := normalized(l)
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("encoding lock: %w", err)
	}
	w, problems := toWire(c)
	if len(problems) > 0 {
		return nil, fmt.Errorf("encoding lock: %w", &InvalidError{Problems: problems})
	}
	out, err := encodeCanonical(w)
	if err != nil {
		return nil, fmt.Errorf("encoding lock: %w", err)
	}
	return out, nil
}

// Unmarshal decodes and validates a lock: the matching reader of Marshal.
//
// It is strict. A syntax error, a value of the wrong type, an unknown key
// (at any depth, describe documents included) or trailing data is reported
// alone, since nothing after it can be trusted. A lock of another format
// version returns a *VersionError (use errors.As), whose message says to
// run `toolbox lock`. Otherwise every inconsistency is collected into one
// *InvalidError. Every command's tool comes back whole, filled from its
// binary's entry, with one Describe shared by the binary's commands.
func Unmarshal(data []byte) (*Lock, error) {
	l := new(Lock)
	w := &wireLock{Lock: l}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(w)
	if err == nil {
		// Anything but whitespace after the object is not a lock.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the top-level object")
		}
	}
	if err != nil {
		// A lock of another version is likely to fail decoding too: the
		// version is the more useful thing to say.
		if v, ok := peekVersion(data); ok && v != FormatVersion {
			return nil, &VersionError{Version: v}
		}
		return nil, fmt.Errorf("decoding lock: %w", err)
	}
	if l.Version != FormatVersion {
		return nil, &VersionError{Version: l.Version}
	}
	problems := fromWire(w)
	if err := l.Validate(); err != nil {
		var ie *InvalidError
		if !errors.As(err, &ie) {
			return nil, err
		}
		problems = append(problems, ie.Problems...)
	}
	if len(problems) > 0 {
		return nil, &InvalidError{Problems: problems}
	}
	return l, nil
}

// peekVersion reads only the top-level "version" key, leniently.
func peekVersion(data []byte) (int, bool) {
	var v struct {
		Version *int `json:"version"`
	}
	if json.Unmarshal(data, &v) != nil || v.Version == nil {
		return 0, false
	}
	return *v.Version, true
}

// normalized returns a shallow copy of l in the form Marshal writes: nil
// maps made empty, Builtins sorted. l itself is left untouched.
func normalized(l *Lock) *Lock {
	c := *l
	if c.Tools == nil {
		c.Tools = map[string]*Tool{}
	}
	if c.Capabilities == nil {
		c.Capabilities = map[string]*Capability{}
	}
	if c.Builtins != nil {
		c.Builtins = slices.Clone(c.Builtins)
		slices.Sort(c.Builtins)
	}
	return &c
}

// encodeCanonical encodes a lock (its wire form, toWire) with every key
// sorted. encoding/json writes struct fields in declaration order and
// json.RawMessage (event schemas in describe documents) verbatim, so the
// first encoding is decoded into generic values, whose map keys the
// encoder sorts, and encoded again. UseNumber keeps every number's text as
// it was.
func encodeCanonical(w *wireLock) ([]byte, error) {
	first, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.UseNumber()
	var generic map[string]any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	// nil means "unset" and must stay distinguishable from an empty list.
	if v, ok := generic["env_allowlist"]; ok && v == nil {
		delete(generic, "env_allowlist")
	}
	return encodeIndented(generic)
}

// canonicalJSON encodes any value with sorted keys and no indentation; Diff
// uses it to compare describe documents.
func canonicalJSON(v any) ([]byte, error) {
	first, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func encodeIndented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
