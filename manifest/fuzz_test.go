package manifest

import (
	"bytes"
	"testing"
)

// FuzzUnmarshal: Unmarshal never panics, and whatever it accepts marshals
// and reads back to the same bytes. The seed corpus is under
// testdata/fuzz/FuzzUnmarshal and runs with every `go test`.
func FuzzUnmarshal(f *testing.F) {
	f.Add(mustMarshal(f, testLock()))
	f.Add(mustMarshal(f, smallLock()))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Unmarshal(data)
		if err != nil {
			return
		}
		first, err := Marshal(l)
		if err != nil {
			t.Fatalf("accepted lock does not marshal: %v", err)
		}
		again, err := Unmarshal(first)
		if err != nil {
			t.Fatalf("marshalled lock does not read back: %v\n%s", err, first)
		}
		second, err := Marshal(again)
		if err != nil {
			t.Fatalf("re-read lock does not marshal: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("re-marshal differs:\n%s\nvs\n%s", first, second)
		}
	})
}
