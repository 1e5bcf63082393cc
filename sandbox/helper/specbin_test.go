package helper

import (
	"bytes"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// fill sets every field of v reachable from it (nested structs, pointers,
// slices of one element) to a value that is not the zero value, distinct
// per field, so that a field the binary form forgets shows in a round
// trip.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(-int64(*n) * 1000003)
	case reflect.Uint32:
		v.SetUint(uint64(*n)*7 + 1<<31)
	case reflect.Uint64:
		v.SetUint(uint64(*n)<<40 + 3)
	case reflect.String:
		v.SetString(strings.Repeat("é", *n) + "\x00/x")
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), n)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("json") == "-" {
				continue
			}
			fill(v.Field(i), n)
		}
	}
}

func fullSpec(t *testing.T) *Spec {
	t.Helper()
	var s Spec
	n := 0
	fill(reflect.ValueOf(&s).Elem(), &n)
	if s.Ruleset == nil || s.RunAs == nil || len(s.Grants) == 0 || len(s.Rlimits) == 0 || s.Seccomp == nil {
		t.Fatalf("fill left fields empty: %+v", s)
	}
	return &s
}

// Every field Spec sends survives the binary form; the ones never sent
// (json:"-") do not travel.
func TestSpecBinaryRoundTrip(t *testing.T) {
	for name, in := range map[string]*Spec{
		"full":  fullSpec(t),
		"zero":  {},
		"plain": {Plain: true, Path: "/bin/true", Argv: []string{"true"}, Env: []string{}, ParentPID: 42},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := in.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var out Spec
			if err := out.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			want := *in
			want.SelfLimited = false
			if !reflect.DeepEqual(normalize(&out), normalize(&want)) {
				t.Errorf("round trip:\n got %+v\nwant %+v", out, want)
			}
		})
	}
	in := fullSpec(t)
	in.SelfLimited = true
	in.Grants[0].File = nil
	data, _ := in.MarshalBinary()
	var out Spec
	if err := out.UnmarshalBinary(data); err != nil || out.SelfLimited {
		t.Errorf("SelfLimited (never sent) arrived: %v %v", out.SelfLimited, err)
	}
}

// normalize makes empty slices nil: the form does not tell them apart,
// and no reader of a Spec does.
func normalize(s *Spec) Spec {
	c := *s
	if len(c.Argv) == 0 {
		c.Argv = nil
	}
	if len(c.Env) == 0 {
		c.Env = nil
	}
	if len(c.Seccomp) == 0 {
		c.Seccomp = nil
	}
	return c
}

// A spec cut anywhere, followed by anything, or written by a build whose
// Spec differs is refused, never half-read.
func TestSpecBinaryRefusesDamage(t *testing.T) {
	data, err := fullSpec(t).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(data) {
		var s Spec
		if err := s.UnmarshalBinary(data[:i]); err == nil {
			t.Fatalf("a spec cut at %d of %d bytes decoded", i, len(data))
		}
		if !reflect.DeepEqual(s, Spec{}) {
			t.Fatalf("a spec cut at %d was half-read: %+v", i, s)
		}
	}
	var s Spec
	if err := s.UnmarshalBinary(append(bytes.Clone(data), 0)); err == nil || !strings.Contains(err.Error(), "after the last field") {
		t.Errorf("trailing byte: %v", err)
	}
	var w specWriter
	w.string(strings.Replace(SpecLayout, "Plain bool", "Plain bool,ADenyList []string", 1))
	if err := s.UnmarshalBinary(w.b); err == nil || !strings.Contains(err.Error(), "same build") {
		t.Errorf("another layout: %v", err)
	}
	bad := bytes.Clone(data)
	bad[len(encodedLayout())] = 2 // Plain, a boolean, as 2
	if err := s.UnmarshalBinary(bad); err == nil {
		t.Error("a boolean byte of 2 decoded")
	}
}

func encodedLayout() []byte {
	var w specWriter
	w.string(SpecLayout)
	return w.b
}

// The layout names every sent field, nested ones included, and not the
// others: it changes whenever Spec's form would.
func TestSpecLayout(t *testing.T) {
	for _, want := range []string{"Spec{Plain bool,", "Grants []Grant{Path string,Write bool,Dir bool,FD int}", "RunAs *Identity{UID uint32,GID uint32,Groups []uint32}", "Seccomp []uint8", ",ProcsFD int}"} {
		if !strings.Contains(SpecLayout, want) {
			t.Errorf("layout %s lacks %s", SpecLayout, want)
		}
	}
	for _, never := range []string{"SelfLimited", "File"} {
		if strings.Contains(SpecLayout, never) {
			t.Errorf("layout %s names %s, which is never sent", SpecLayout, never)
		}
	}
}

// No input makes UnmarshalBinary panic or allocate beyond its size.
func FuzzSpecUnmarshalBinary(f *testing.F) {
	full, _ := (&Spec{Plain: true, Path: "/p", Argv: []string{"a"}, Grants: []Grant{{Path: "/g", Dir: true, FD: 5}}, RunAs: &Identity{UID: 1, Groups: []uint32{2}}, Ruleset: &Ruleset{Scoped: 3}, Rlimits: []Rlimit{{Resource: 7, Cur: 1, Max: 2}}}).MarshalBinary()
	f.Add(full)
	f.Add(encodedLayout())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Spec
		if err := s.UnmarshalBinary(data); err != nil {
			return
		}
		again, _ := s.MarshalBinary()
		var s2 Spec
		if err := s2.UnmarshalBinary(again); err != nil || !reflect.DeepEqual(normalize(&s), normalize(&s2)) {
			t.Fatalf("decoded spec does not survive a second trip: %v", err)
		}
	})
}

// A count of elements claiming every byte left (a corrupt or hostile
// spec) makes the reader allocate no more than a small multiple of the
// spec's size: each element is bounded by the bytes its smallest encoding
// takes, not by one byte, so a 1 MiB spec of "grants" cannot cost 40 MiB.
// Twin: a spec with a thousand grants still decodes.
func TestSpecBinaryCountBoundsAllocation(t *testing.T) {
	const n = 1 << 20
	var w specWriter
	w.string(SpecLayout)
	w.bool(false)  // Plain
	w.string("")   // Path
	w.int(0)       // ExeFD
	w.bool(false)  // Script
	w.strings(nil) // Argv
	w.strings(nil) // Env
	w.string("")   // Dir
	w.uint(n)      // Grants: as many as there are bytes left
	data := append(w.b, make([]byte, n)...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var s Spec
	err := s.UnmarshalBinary(data)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a spec of a million empty grants and nothing after decoded")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16*uint64(len(data)) {
		t.Errorf("decoding a %d-byte spec allocated %d bytes (%dx)", len(data), got, got/uint64(len(data)))
	}
	many := &Spec{Grants: make([]Grant, 1000)}
	for i := range many.Grants {
		many.Grants[i] = Grant{Path: "/g", FD: i}
	}
	data, err = many.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := back.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if len(back.Grants) != 1000 || back.Grants[999].FD != 999 {
		t.Errorf("a thousand grants came back as %d", len(back.Grants))
	}
}
