package sandbox

import (
	"sync"
	"testing"
)

// Prefetch and the starts that follow share one compilation of a filter
// variant, whoever asks first, and get the same program.
func TestPrefetchSharesTheCompilation(t *testing.T) {
	spec := &Spec{Mechanism: Bwrap, NetNone: true}
	want, err := program(spec.toolRules(Bwrap), false)
	if err != nil {
		t.Fatal(err)
	}
	compiled.Clear()
	filterBytesCache.Clear()
	Prefetch(spec)
	var wg sync.WaitGroup
	progs := make([][]byte, 8)
	for i := range progs {
		wg.Go(func() {
			b, err := spec.filterBytes(Bwrap)
			if err != nil {
				t.Error(err)
			}
			progs[i] = b
		})
	}
	wg.Wait()
	for i, b := range progs {
		if string(b) != string(bpfBytes(want)) {
			t.Fatalf("start %d got another program", i)
		}
	}
	n := 0
	compiled.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d variants compiled, want 1", n)
	}
}
