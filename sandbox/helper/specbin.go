package helper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// The helper's Spec travels in a binary form of its own rather than JSON:
// the helper starts at every run of a tool not under bwrap, and decoding
// JSON into Spec costs its first use of encoding/json's reflection, about
// 0.25 ms of a 2 ms start on these machines (issue 13). LimitsSpec, read
// by the limits wrapper only when the helper cannot hold a limit itself,
// stays JSON.
//
// Layout: SpecLayout, then each field of Spec in declaration order, not
// the ones tagged json:"-" (never sent): bool as one byte 0 or 1; int as
// a zig-zag varint; uint32 and uint64 as uvarints; string and []byte as a
// uvarint length then the bytes; a slice as a uvarint count then its
// elements; a pointer as a presence byte then the value. Nothing may
// follow the last field.

// SpecLayout names the fields and types Spec's binary form carries, in
// order (from Spec's declaration, by reflection). It is the form's first
// bytes: a helper whose Spec differs (another build) refuses the spec
// rather than misread it, as DecodeSpec refuses an unknown JSON field.
var SpecLayout = layoutOf(reflect.TypeFor[Spec]())

// layoutOf writes t's sent fields and their types, nested structs
// expanded: "Spec{Plain bool,Path string,...}".
func layoutOf(t reflect.Type) string {
	var b strings.Builder
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer:
			b.WriteByte('*')
			walk(t.Elem())
		case reflect.Slice:
			b.WriteString("[]")
			walk(t.Elem())
		case reflect.Struct:
			b.WriteString(t.Name())
			b.WriteByte('{')
			first := true
			for i := range t.NumField() {
				f := t.Field(i)
				if f.Tag.Get("json") == "-" {
					continue
				}
				if !first {
					b.WriteByte(',')
				}
				first = false
				b.WriteString(f.Name)
				b.WriteByte(' ')
				walk(f.Type)
			}
			b.WriteByte('}')
		default:
			b.WriteString(t.Kind().String())
		}
	}
	walk(t)
	return b.String()
}

// MarshalBinary encodes s in the helper's binary form (see SpecLayout).
func (s *Spec) MarshalBinary() ([]byte, error) {
	var w specWriter
	w.string(SpecLayout)
	w.bool(s.Plain)
	w.string(s.Path)
	w.int(s.ExeFD)
	w.bool(s.Script)
	w.strings(s.Argv)
	w.strings(s.Env)
	w.string(s.Dir)
	w.uint(uint64(len(s.Grants)))
	for _, g := range s.Grants {
		w.string(g.Path)
		w.bool(g.Write)
		w.bool(g.Dir)
		w.int(g.FD)
	}
	w.bool(s.RunAs != nil)
	if id := s.RunAs; id != nil {
		w.uint(uint64(id.UID))
		w.uint(uint64(id.GID))
		w.uint(uint64(len(id.Groups)))
		for _, g := range id.Groups {
			w.uint(uint64(g))
		}
	}
	w.int(s.ParentPID)
	w.int(s.StatusFD)
	w.bytes(s.Seccomp)
	w.bool(s.Ruleset != nil)
	if r := s.Ruleset; r != nil {
		w.uint(r.HandledFS)
		w.uint(r.HandledNet)
		w.uint(r.Scoped)
		w.uint(uint64(r.RestrictFlags))
	}
	w.uint(uint64(len(s.Rlimits)))
	for _, l := range s.Rlimits {
		w.int(l.Resource)
		w.uint(l.Cur)
		w.uint(l.Max)
	}
	w.int(s.ProcsFD)
	return w.b, nil
}

// UnmarshalBinary decodes data, MarshalBinary's form, into s. Errors: a
// spec of another layout (another build), cut short, with a value out of
// range, or with bytes after its last field.
func (s *Spec) UnmarshalBinary(data []byte) error {
	r := specReader{b: data}
	if layout := r.string(); r.err == nil && layout != SpecLayout {
		return fmt.Errorf("decoding spec: its layout is %.80q…, not this binary's %.80q…: is this binary from the same build as toolbox?", layout, SpecLayout)
	}
	var v Spec
	v.Plain = r.bool()
	v.Path = r.string()
	v.ExeFD = r.int()
	v.Script = r.bool()
	v.Argv = r.strings()
	v.Env = r.strings()
	v.Dir = r.string()
	if n := r.count(4); n > 0 { // path length, write, dir, fd: 4 bytes at least
		v.Grants = make([]Grant, n)
		for i := range v.Grants {
			g := &v.Grants[i]
			g.Path, g.Write, g.Dir, g.FD = r.string(), r.bool(), r.bool(), r.int()
		}
	}
	if r.bool() {
		id := &Identity{UID: r.uint32(), GID: r.uint32()}
		if n := r.count(1); n > 0 {
			id.Groups = make([]uint32, n)
			for i := range id.Groups {
				id.Groups[i] = r.uint32()
			}
		}
		v.RunAs = id
	}
	v.ParentPID = r.int()
	v.StatusFD = r.int()
	v.Seccomp = r.bytes()
	if r.bool() {
		v.Ruleset = &Ruleset{HandledFS: r.uint(), HandledNet: r.uint(), Scoped: r.uint(), RestrictFlags: r.uint32()}
	}
	if n := r.count(3); n > 0 { // resource, cur, max: 3 bytes at least
		v.Rlimits = make([]Rlimit, n)
		for i := range v.Rlimits {
			v.Rlimits[i] = Rlimit{Resource: r.int(), Cur: r.uint(), Max: r.uint()}
		}
	}
	v.ProcsFD = r.int()
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the last field", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("decoding spec (is this binary from the same build as toolbox?): %w", r.err)
	}
	*s = v
	return nil
}

// specWriter appends Spec's binary form.
type specWriter struct{ b []byte }

func (w *specWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}
func (w *specWriter) int(v int)     { w.b = binary.AppendVarint(w.b, int64(v)) }
func (w *specWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *specWriter) string(v string) {
	w.uint(uint64(len(v)))
	w.b = append(w.b, v...)
}
func (w *specWriter) bytes(v []byte) {
	w.uint(uint64(len(v)))
	w.b = append(w.b, v...)
}
func (w *specWriter) strings(v []string) {
	w.uint(uint64(len(v)))
	for _, s := range v {
		w.string(s)
	}
}

// specReader reads Spec's binary form. The first error sticks: every
// later read returns a zero value.
type specReader struct {
	b   []byte
	err error
}

var errSpecShort = errors.New("cut short")

func (r *specReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *specReader) bool() bool {
	if r.err != nil || len(r.b) == 0 {
		r.fail(errSpecShort)
		return false
	}
	c := r.b[0]
	r.b = r.b[1:]
	if c > 1 {
		r.fail(fmt.Errorf("a boolean byte %d", c))
		return false
	}
	return c == 1
}

func (r *specReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errSpecShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *specReader) int() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || int64(int(v)) != v {
		r.fail(errSpecShort)
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *specReader) uint32() uint32 {
	v := r.uint()
	if v > 1<<32-1 {
		r.fail(fmt.Errorf("%d does not fit 32 bits", v))
		return 0
	}
	return uint32(v)
}

// count reads a length or a number of elements, each of which takes at
// least min bytes (its smallest encoding), so that it cannot exceed the
// bytes left divided by min: a corrupt count makes the reader allocate at
// most a small multiple of the spec's own size (16 bytes per byte, for
// a []string of empty strings), never a count's worth of elements.
func (r *specReader) count(min uint64) int {
	v := r.uint()
	if v > uint64(len(r.b))/min {
		r.fail(errSpecShort)
		return 0
	}
	return int(v)
}

func (r *specReader) bytes() []byte {
	n := r.count(1)
	if r.err != nil || n == 0 {
		return nil
	}
	v := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return v
}

func (r *specReader) string() string {
	n := r.count(1)
	if r.err != nil {
		return ""
	}
	v := string(r.b[:n])
	r.b = r.b[n:]
	return v
}

func (r *specReader) strings() []string {
	n := r.count(1)
	if r.err != nil {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = r.string()
	}
	return v
}
