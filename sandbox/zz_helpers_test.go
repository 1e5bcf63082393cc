package sandbox

import (
	"os"
	"os/exec"
	"testing"
)

func requireMechanism(t testing.TB, m Mechanism) {
	s := Detect()
	switch m {
	case Bwrap:
		if !s.Bwrap {
			t.Skipf("bwrap unusable here: %s", s.BwrapReason)
		}
	case Landlock:
		if !s.Landlock {
			t.Skipf("landlock unusable here: %s", s.LandlockReason)
		}
	}
}

func truePath(t testing.TB) string {
	p, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true")
	}
	return p
}

func TestMain(m *testing.M) {
	Init()
	os.Exit(m.Run())
}
