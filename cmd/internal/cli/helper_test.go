package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FindHelper takes only this build's toolbox binary beside the running
// one: nothing there, another program, or another Go binary of that name
// is refused.
func TestFindHelperRefusesOtherPrograms(t *testing.T) {
	self, p := helperPath(t)
	if _, err := FindHelper(); err == nil {
		t.Fatal("FindHelper found a helper where there is none")
	}
	for _, c := range []struct {
		name, want string
		content    func() []byte
	}{
		{"a script", "reading its build information", func() []byte { return []byte("#!/bin/sh\nexit 0\n") }},
		{"another Go program", "is not the toolbox binary of this build", func() []byte {
			data, err := os.ReadFile(self) // this test binary: cmd/internal/cli's
			if err != nil {
				t.Fatal(err)
			}
			return data
		}},
	} {
		if err := os.WriteFile(p, c.content(), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := FindHelper(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as toolbox: %v, want %q", c.name, err, c.want)
		}
		os.Remove(p)
	}
}

// helperPath returns the running test binary and the path where FindHelper
// looks for the helper beside it, which the test may create (it is removed
// at cleanup); the test is skipped when something is there already.
func helperPath(t *testing.T) (self, p string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p = filepath.Join(filepath.Dir(self), ToolboxName)
	if _, err := os.Lstat(p); err == nil {
		t.Skipf("%s exists already", p)
	}
	t.Cleanup(func() { os.Remove(p) })
	return self, p
}
