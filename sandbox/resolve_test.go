package sandbox

import (
	"errors"
	"strings"
	"testing"
)

var (
	everything = Support{Bwrap: true, BwrapRunAs: true, LandlockABI: 7, Landlock: true, RunAs: true}
	noBwrap    = Support{BwrapReason: `finding bwrap: exec: "bwrap": executable file not found in $PATH`,
		BwrapRunAsReason: "bwrap does not run", LandlockABI: 7, Landlock: true, RunAs: true}
	nothing = Support{BwrapReason: "bwrap missing", BwrapRunAsReason: "bwrap missing",
		LandlockReason: "the kernel has no landlock", RunAsReason: "toolbox runs as uid 1000, not root"}
)

func TestResolve(t *testing.T) {
	sandbox := Need{Sandbox: true}
	cases := []struct {
		name      string
		s         Support
		requested Mechanism
		need      Need
		want      Mechanism
		field     string    // refused when set
		mech      Mechanism // the refusing mechanism
	}{
		{"undeclared runs as today", nothing, Auto, Need{}, None, "", ""},
		{"undeclared under bwrap", everything, Bwrap, Need{}, None, "", ""},
		{"none refuses a sandbox", everything, None, sandbox, "", FieldSandbox, None},
		{"none refuses run_as", everything, None, Need{RunAs: true}, "", FieldRunAs, None},
		{"bwrap", everything, Bwrap, Need{Sandbox: true, NetNone: true, TmpPrivate: true, HasReadWrite: true}, Bwrap, "", ""},
		{"bwrap missing", noBwrap, Bwrap, sandbox, "", FieldSandbox, Bwrap},
		{"bwrap without userns for run_as", Support{Bwrap: true, BwrapRunAsReason: "no user namespaces", RunAs: true},
			Bwrap, Need{Sandbox: true, RunAs: true}, "", FieldRunAs, Bwrap},
		{"landlock", everything, Landlock, Need{Sandbox: true, HasReadWrite: true, RunAs: true}, Landlock, "", ""},
		{"landlock refuses net none", everything, Landlock, Need{Sandbox: true, NetNone: true}, "", FieldNet, Landlock},
		{"landlock refuses tmp private", everything, Landlock, Need{Sandbox: true, TmpPrivate: true}, "", FieldTmp, Landlock},
		{"landlock missing", noBwrap.withoutLandlock(), Landlock, sandbox, "", FieldSandbox, Landlock},
		{"landlock run_as needs root", Support{Landlock: true, RunAsReason: "not root"}, Landlock, Need{Sandbox: true, RunAs: true}, "", FieldRunAs, Landlock},
		{"auto prefers bwrap", everything, Auto, Need{Sandbox: true, NetNone: true}, Bwrap, "", ""},
		{"auto falls to landlock", noBwrap, Auto, sandbox, Landlock, "", ""},
		{"auto without bwrap refuses net none", noBwrap, Auto, Need{Sandbox: true, NetNone: true}, "", FieldNet, Auto},
		{"auto without bwrap refuses tmp private", noBwrap, Auto, Need{Sandbox: true, TmpPrivate: true}, "", FieldTmp, Auto},
		{"auto with nothing", nothing, Auto, sandbox, "", FieldSandbox, Auto},
		{"run_as alone under auto", everything, Auto, Need{RunAs: true}, Bwrap, "", ""},
		{"run_as alone, not root", nothing, Auto, Need{RunAs: true}, "", FieldSandbox, Auto},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.s.Resolve(c.requested, c.need)
			if c.field == "" {
				if err != nil || got != c.want {
					t.Fatalf("got %q, %v; want %q", got, err, c.want)
				}
				return
			}
			r := wantRefusal(t, err, c.field)
			if r.Mechanism != c.mech || r.Reason == "" || r.Fix == "" {
				t.Fatalf("refusal %+v: want mechanism %q, a reason and a fix", r, c.mech)
			}
		})
	}
}

// The case: auto on a machine without bwrap, a tool with net:
// none. The message names the tool, the field, the mechanism and both
// mechanisms' reasons.
func TestAutoWithoutBwrapRefusesNetNone(t *testing.T) {
	_, err := noBwrap.Resolve(Auto, Need{Sandbox: true, NetNone: true})
	r := wantRefusal(t, err, FieldNet)
	r.Tool = "grep_repo"
	msg := r.Error()
	for _, want := range []string{`tool "grep_repo"`, "runtime.sandbox.net", `"auto"`, "executable file not found", "landlock cannot cut the network"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	// Twin: with bwrap present the same tool resolves.
	if m, err := everything.Resolve(Auto, Need{Sandbox: true, NetNone: true}); err != nil || m != Bwrap {
		t.Fatalf("with bwrap: %q, %v", m, err)
	}
}

func TestResolveUnknownMechanism(t *testing.T) {
	for _, need := range []Need{{}, {Sandbox: true}} {
		if _, err := everything.Resolve("firejail", need); err == nil {
			t.Errorf("an unknown mechanism resolved for %+v", need)
		}
	}
	if _, err := Start(&Spec{Mechanism: Auto}, Command{Path: "/bin/true"}); err == nil {
		t.Error("Start accepted an unresolved auto")
	}
}

// Detect ran here: CI installs bubblewrap, and the kernel has landlock.
// The probe's own findings must be usable by Resolve.
func TestDetectMatchesResolve(t *testing.T) {
	s := Detect()
	if s != Detect() {
		t.Fatal("Detect is not cached")
	}
	m, err := s.Resolve(Auto, Need{Sandbox: true})
	switch {
	case s.Bwrap && m != Bwrap:
		t.Fatalf("bwrap works but auto chose %q (%v)", m, err)
	case !s.Bwrap && s.Landlock && m != Landlock:
		t.Fatalf("landlock works but auto chose %q (%v)", m, err)
	case !s.Bwrap && !s.Landlock && err == nil:
		t.Fatal("nothing works but auto resolved")
	}
	if !s.Bwrap && s.BwrapReason == "" || !s.Landlock && s.LandlockReason == "" {
		t.Fatalf("a mechanism is missing without a reason: %+v", s)
	}
}

func (s Support) withoutLandlock() Support {
	s.Landlock, s.LandlockReason = false, "the kernel has no landlock"
	return s
}

// Without Init the re-executed binary would run its normal main (a test
// binary its tests, recursively): landlock refuses instead.
func TestLandlockNeedsInit(t *testing.T) {
	requireMechanism(t, Landlock)
	initDone.Store(false)
	_, err := Start(pin(&Spec{Mechanism: Landlock}), Command{Path: "/bin/true"})
	initDone.Store(true)
	if !errors.Is(err, ErrStartFailed) || !strings.Contains(err.Error(), "sandbox.Init") {
		t.Fatalf("without Init: %v", err)
	}
	r := runSh(t, pin(&Spec{Mechanism: Landlock}), "exit 0")
	if r.code != 0 {
		t.Fatalf("with Init: exit %d, %q", r.code, r.stderr)
	}
}
