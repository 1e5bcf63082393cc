package corecmd

import (
	"bytes"
	"testing"

	"github.com/toolbox-dev/toolbox/launcher/exposure"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// The text form of check --probe's exposure section: per tool its verdict
// and confinement on one line, what it reads and writes, its protected
// paths counted by how they are kept away, its limits, the reasons; a
// refused tool with the refusal and its fix.
func TestPrintExposure(t *testing.T) {
	r := exposureReport{Tools: []exposure.Entry{
		{Name: "fetch", Exposure: &sandbox.Exposure{
			Mechanism: sandbox.Bwrap, FS: "granted", Net: "host", Seccomp: "tool+net",
			Read:      []sandbox.PathExposure{{Path: "/srv/real", Inside: "/srv/link"}, {Path: "/tb/tools", Inside: "/tb/tools"}},
			Write:     []sandbox.PathExposure{{Path: "/tb/out", Inside: "/tb/out"}},
			Tmp:       sandbox.TmpExposure{Kind: "shared", Path: "/tmp/toolbox-0/ab", Inside: "/tmp"},
			Protected: []sandbox.ProtectedExposure{{How: sandbox.ProtectedMasked}, {How: sandbox.ProtectedOutOfReach}, {How: sandbox.ProtectedMasked}},
			Limits:    []sandbox.LimitExposure{{Limit: "memory", Value: "4GiB", Enforced: true}, {Limit: "cpu_seconds", Value: "unlimited"}, {Limit: "tmp_size", Value: "64MiB"}},
			Verdict:   sandbox.Verdict{Level: sandbox.LevelPartial, Reasons: []sandbox.Reason{{ID: "net-host", Text: "net: host: it reaches the host's network"}}},
		}},
		{Name: "go_test", Exposure: &sandbox.Exposure{
			Mechanism: sandbox.None, FS: "host", Net: "host", Tmp: sandbox.TmpExposure{Kind: "host"},
			Verdict: sandbox.Verdict{Level: sandbox.LevelExposed, Reasons: []sandbox.Reason{{ID: "unconfined", Text: "runs unconfined as root (uid 0)"}}},
		}},
		{Name: "odd", Refused: "runtime.sandbox.net cannot be honoured by sandbox \"landlock\"", Fix: "use bwrap"},
	}}
	var out bytes.Buffer
	printExposure(&out, r)
	want := `exposure (confined, partial or exposed):
  fetch: partial (bwrap, uid 0, net host, tmp shared /tmp/toolbox-0/ab at /tmp, seccomp tool+net)
    read: /srv/real as /srv/link, /tb/tools
    write: /tb/out
    protected: 2 masked read only, 1 out of reach
    limits: memory 4GiB, tmp_size 64MiB (not enforced)
    - net-host: net: host: it reaches the host's network
  go_test: exposed (none, uid 0, net host, tmp host, seccomp none)
    - unconfined: runs unconfined as root (uid 0)
  odd: refused: runtime.sandbox.net cannot be honoured by sandbox "landlock" (fix: use bwrap)
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
