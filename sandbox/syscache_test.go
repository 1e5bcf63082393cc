package sandbox

import (
	"reflect"
	"testing"
)

// The cached system entries are the scan's, for both network settings,
// and a changed stamp of "/" or "/etc" makes the next start scan again.
func TestSystemEntriesCache(t *testing.T) {
	for _, netHost := range []bool{false, true} {
		want := scanSystemEntries(netHost)
		if got := systemEntries(netHost); !reflect.DeepEqual(got, want) {
			t.Fatalf("netHost %v: cached %+v, scanned %+v", netHost, got, want)
		}
		got := systemEntries(netHost)
		got[0].src = "/changed" // a caller's copy: the cache keeps its own
		if again := systemEntries(netHost); !reflect.DeepEqual(again, want) {
			t.Fatalf("netHost %v: a caller's change reached the cache: %+v", netHost, again)
		}
	}
	// What a change of /etc looks like to the cache: another stamp.
	sysCache.mu.Lock()
	sysCache.byNet[1].stamp.etc.ino++
	sysCache.byNet[1].entries = []sysEntry{{path: "/stale"}}
	sysCache.mu.Unlock()
	if got := systemEntries(true); !reflect.DeepEqual(got, scanSystemEntries(true)) {
		t.Fatalf("after /etc changed: %+v, want a new scan", got)
	}
}
