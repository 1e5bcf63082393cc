package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tests run in a TMPDIR of their own, as every package's do: the
// directories OpenDir makes are then open to all whatever the caller's
// TMPDIR.
func TestMain(m *testing.M) { os.Exit(RunWithTmp(m)) }

type runFunc func() int

func (f runFunc) Run() int { return f() }

// RunWithTmp gives the tests a TMPDIR any user can reach, even when the
// caller's TMPDIR is private (mktemp -d makes it 0700), and one inside the
// caller's TMPDIR when that is open to all.
func TestRunWithTmpIsReachableByAll(t *testing.T) {
	open := OpenDir(t, "open")
	private := filepath.Join(open, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if !SearchableByAll(open) || SearchableByAll(private) || SearchableByAll(filepath.Join(private, "x")) {
		t.Fatalf("SearchableByAll(%s, %s) wrong", open, private)
	}
	for _, tc := range []struct{ tmpdir, under string }{{open, open}, {private, "/tmp"}} {
		t.Setenv("TMPDIR", tc.tmpdir)
		var got string
		code := RunWithTmp(runFunc(func() int { got = os.TempDir(); return 7 }))
		if code != 7 {
			t.Errorf("TMPDIR %s: RunWithTmp returned %d, want m.Run's 7", tc.tmpdir, code)
		}
		if filepath.Dir(got) != tc.under || !strings.HasPrefix(filepath.Base(got), "toolbox-test-") {
			t.Errorf("TMPDIR %s: the tests' TMPDIR was %s, want a toolbox-test-* directory in %s", tc.tmpdir, got, tc.under)
		}
		if _, err := os.Stat(got); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", got, err)
		}
	}
}
