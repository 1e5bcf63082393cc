package manifest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// diskLockOf writes data as a lock file and reads it back.
func diskLockOf(t *testing.T, data []byte) DiskLock {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolbox.lock.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return ReadDiskLock(path)
}

func TestReadDiskLock(t *testing.T) {
	data := mustMarshal(t, testLock())
	d := diskLockOf(t, data)
	if d.ReadErr != nil || d.Bad != nil || !bytes.Equal(d.Data, data) || d.Lock == nil {
		t.Errorf("a good lock: %+v", d)
	}
	d = diskLockOf(t, []byte(`{"format_version":`))
	if d.ReadErr != nil || d.Bad == nil || d.Lock != nil || d.Data == nil {
		t.Errorf("a lock that does not decode: %+v", d)
	}
	d = ReadDiskLock(filepath.Join(t.TempDir(), "none.lock.json"))
	if !errors.Is(d.ReadErr, fs.ErrNotExist) || d.Data != nil || d.Lock != nil {
		t.Errorf("no lock: %+v", d)
	}
	// A FIFO at the lock's place is refused, not waited on.
	fifo := testenv.FIFO(t, "toolbox.lock.json")
	err := testenv.Unblocked(t, fifo, func() error { return ReadDiskLock(fifo).ReadErr })
	if !errors.Is(err, inputfile.ErrNotRegular) {
		t.Errorf("a FIFO lock: %v, want ErrNotRegular", err)
	}
}

func TestDrift(t *testing.T) {
	next := testLock()
	data := mustMarshal(t, next)
	for _, tc := range []struct {
		name     string
		disk     func(l *Lock) []byte // the lock on disk, made from a copy of next
		want     []string
		wantPrev bool
	}{
		{"equal", func(l *Lock) []byte { return mustMarshal(t, l) }, nil, true},
		{"only the toolbox file's bytes", func(l *Lock) []byte {
			l.File.SHA256 = hashOf('e')
			return mustMarshal(t, l)
		}, nil, true},
		{"the toolbox file's configuration", func(l *Lock) []byte {
			l.File.SHA256, l.File.Config = hashOf('e'), hashOf('9')
			return mustMarshal(t, l)
		}, []string{"toolbox file configuration changed (sha256 999999999999 -> ffffffffffff)"}, true},
		{"a tool", func(l *Lock) []byte {
			l.Tools["read_file"].SHA256 = hashOf('9')
			return mustMarshal(t, l)
		}, Diff(func() *Lock { l := testLock(); l.Tools["read_file"].SHA256 = hashOf('9'); return l }(), next), true},
		{"not canonical", func(l *Lock) []byte {
			return append(mustMarshal(t, l)[:len(data)-1], " \n"...)
		}, []string{"the lock on disk is not in canonical form"}, true},
		{"does not load", func(l *Lock) []byte { return []byte("{") }, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := diskLockOf(t, tc.disk(testLock()))
			prev, changes, err := d.Drift(next, data)
			if err != nil {
				t.Fatal(err)
			}
			if (prev != nil) != tc.wantPrev {
				t.Errorf("the lock on disk returned: %v, want %v", prev != nil, tc.wantPrev)
			}
			if tc.name == "does not load" {
				if len(changes) != 1 || !strings.HasPrefix(changes[0], "the lock on disk does not load: ") {
					t.Errorf("changes = %q", changes)
				}
				return
			}
			if !reflect.DeepEqual(changes, tc.want) {
				t.Errorf("changes = %q, want %q", changes, tc.want)
			}
		})
	}
	if _, _, err := ReadDiskLock(filepath.Join(t.TempDir(), "none")).Drift(next, data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no lock: %v, want fs.ErrNotExist", err)
	}
}

// check --probe: the probes' results and active backends are live state,
// not drift; what the tools are is; no lock yet is no difference.
func TestProbedDrift(t *testing.T) {
	disk := testLock()
	disk.Tools["search_rg"].Probe = Probe{Status: StatusFailed, Detail: "rg: not found", Fix: "install ripgrep"}
	disk.Capabilities["search"].Active = ""
	d := diskLockOf(t, mustMarshal(t, disk))
	probed := testLock()
	prev, changes, err := d.ProbedDrift(probed)
	if err != nil || changes != nil || prev == nil {
		t.Errorf("only health differs: %v, %q, %v; want the lock on disk, no changes", prev != nil, changes, err)
	}
	if probed.Tools["search_rg"].Probe.Status != StatusOK || probed.Capabilities["search"].Active != "search_rg" {
		t.Error("ProbedDrift changed the probed lock")
	}
	// What a tool is still counts.
	probed.Tools["search_rg"].SHA256 = hashOf('9')
	if _, changes, err := d.ProbedDrift(probed); err != nil || len(changes) == 0 {
		t.Errorf("a changed binary: %q, %v; want a change", changes, err)
	}
	if prev, changes, err := ReadDiskLock(filepath.Join(t.TempDir(), "none")).ProbedDrift(probed); prev != nil || changes != nil || err != nil {
		t.Errorf("no lock: %v, %q, %v; want no difference", prev, changes, err)
	}
	bad := diskLockOf(t, []byte("{"))
	if prev, changes, err := bad.ProbedDrift(testLock()); prev != nil || len(changes) != 1 || err != nil {
		t.Errorf("a lock that does not load: %v, %q, %v", prev, changes, err)
	}
}

// A DiskLock built by hand (its fields are exported) with bytes but
// neither Lock nor Bad is a lock that differs, not a nil dereference in
// Drift or ProbedDrift.
func TestDriftUndecodedDiskLock(t *testing.T) {
	next := testLock()
	d := DiskLock{Data: []byte("{}")}
	for name, drift := range map[string]func() (*Lock, []string, error){
		"Drift":       func() (*Lock, []string, error) { return d.Drift(next, mustMarshal(t, next)) },
		"ProbedDrift": func() (*Lock, []string, error) { return d.ProbedDrift(next) },
	} {
		prev, changes, err := drift()
		if prev != nil || err != nil || !reflect.DeepEqual(changes, []string{"the lock on disk was not decoded"}) {
			t.Errorf("%s: %v, %q, %v", name, prev, changes, err)
		}
	}
}
