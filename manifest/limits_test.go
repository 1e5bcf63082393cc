package manifest

import (
	"reflect"
	"strings"
	"testing"
)

// Locked limits round-trip, and lock --check (Diff) names a change of
// them, per tool and per builtin.
func TestLimitsRoundTripAndDiff(t *testing.T) {
	l := testLock()
	l.Tools["search_rg"].Runtime.Limits = &Limits{MemoryBytes: 512 << 20, FileSizeBytes: 1 << 20, OpenFiles: 1024, Processes: 64, TmpSizeBytes: 64 << 20}
	l.BuiltinLimits = map[string]*Limits{"process": {CPUSeconds: 60}}
	data := mustMarshal(t, l)
	for _, want := range []string{`"memory_bytes": 536870912`, `"tmp_size_bytes": 67108864`, `"builtin_limits": {`, `"cpu_seconds": 60`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("lock lacks %s:\n%s", want, data)
		}
	}
	back, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Tools["search_rg"].Runtime.Limits, l.Tools["search_rg"].Runtime.Limits) || back.BuiltinLimits["process"].CPUSeconds != 60 {
		t.Fatalf("round trip lost limits: %+v %+v", back.Tools["search_rg"].Runtime.Limits, back.BuiltinLimits)
	}
	next := testLock()
	next.Tools["search_rg"].Runtime.Limits = &Limits{MemoryBytes: 256 << 20}
	got := Diff(back, next)
	want := []string{
		// Named as the toolbox file's limits block spells them.
		`builtin "process": limits changed: cpu_seconds 60 -> none`,
		`tool "search_rg": limits changed: memory "512MiB" -> "256MiB", file_size "1MiB" -> none, open_files 1024 -> none, processes 64 -> none, tmp_size "64MiB" -> none`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// nil and all-zero limits are the same: no limit.
	a, b := testLock(), testLock()
	b.Tools["read_file"].Runtime.Limits = &Limits{}
	if d := Diff(a, b); len(d) != 1 || !strings.Contains(d[0], "lock content differs") {
		t.Fatalf("nil vs empty limits: %q", d)
	}
}

func TestBuiltinLimitsValidated(t *testing.T) {
	l := testLock()
	l.BuiltinLimits = map[string]*Limits{"shell": {}, "process": nil}
	err := l.Validate()
	if err == nil || !strings.Contains(err.Error(), `builtin_limits: "shell" is not among builtins`) || !strings.Contains(err.Error(), `builtin_limits: "process" is null`) {
		t.Fatalf("Validate: %v", err)
	}
}
