package manifest

import (
	"strings"
	"testing"
)

// The shared tmp's size (DESIGN.md §6, D6): an optional top-level key, so
// that format-2 locks written before it keep decoding with the default;
// 0 is unlimited; a partial read (ReadCall) keeps it; a change is drift.
func TestSharedTmpSize(t *testing.T) {
	l := testLock()
	data, err := Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "shared_tmp_size_bytes") {
		t.Fatalf("a lock without a size writes the key:\n%s", data)
	}
	back, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.SharedTmpBytes(); got != DefaultSharedTmpSize {
		t.Fatalf("absent key: %d, want the default %d", got, DefaultSharedTmpSize)
	}
	for _, n := range []uint64{0, 8 << 20} {
		l.SharedTmpSize = &n
		path := writeLockFile(t, l)
		part, err := ReadCall(path, exactly("read_file"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := part.SharedTmpBytes(); got != n {
			t.Errorf("ReadCall: shared tmp size %d, want %d", got, n)
		}
	}
	small := uint64(100)
	l.SharedTmpSize = &small
	if _, err := Marshal(l); err == nil || !strings.Contains(err.Error(), "shared_tmp_size_bytes") {
		t.Errorf("a size below a page: %v, want an error naming shared_tmp_size_bytes", err)
	}
	prev, next := testLock(), testLock()
	big := uint64(1 << 30)
	next.SharedTmpSize = &big
	if d := strings.Join(Diff(prev, next), "\n"); !strings.Contains(d, "shared tmp size 268435456 bytes -> 1073741824 bytes") {
		t.Errorf("diff %q", d)
	}
	if d := Diff(prev, testLock()); len(d) != 0 {
		t.Errorf("twin: no change, diff %q", d)
	}
}
