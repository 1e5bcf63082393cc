package supervisor

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// findByCmdline returns the pids whose command line is exactly argv.
func findByCmdline(argv ...string) []int {
	want := []byte{}
	for _, a := range argv {
		want = append(append(want, a...), 0)
	}
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Equal(data, want) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A grandchild that leaves the process group (setsid) does not outlive
// the stop of a service, under every mechanism: bwrap's pid namespace, the
// sandbox helper as a subreaper (landlock, and none, where the helper
// restricts nothing). Without the reaper an unsandboxed tool's setsid
// grandchild survived the stop (issue 10 #12).
func TestSetsidGrandchildDoesNotOutliveStop(t *testing.T) {
	support := sandbox.Detect()
	for i, mech := range []sandbox.Mechanism{sandbox.None, sandbox.Bwrap, sandbox.Landlock} {
		t.Run(string(mech), func(t *testing.T) {
			switch mech {
			case sandbox.Bwrap:
				testenv.Need(t, support.Bwrap, "bwrap", support.BwrapReason)
			case sandbox.Landlock:
				testenv.Need(t, support.Landlock, "landlock", support.LandlockReason)
			}
			marker := "31.4159" + strconv.Itoa(i) + strconv.Itoa(os.Getpid())
			f := newFixture(t)
			var rt *protocol.Runtime
			if mech != sandbox.None {
				rt = &protocol.Runtime{Sandbox: &protocol.Sandbox{}}
			}
			tl := f.AddTool(t, "escaper", `setsid sleep `+marker+` </dev/null >/dev/null 2>&1 & echo ready; exec sleep 30`,
				describe("escaper", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)}, rt))
			tl.Runtime.Mechanism = string(mech)
			if pin := support.BwrapPin; mech == sandbox.Bwrap && pin != nil {
				f.Lock.Bwrap = &manifest.Pin{Path: pin.Path, SHA256: pin.SHA256}
			}
			s := f.supervisor(t)
			h, err := s.Start(ctxT(t), "sess", "escaper", nil, StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 5*time.Second, "the setsid grandchild", func() bool { return len(findByCmdline("sleep", marker)) == 1 })
			if _, err := s.Stop(ctxT(t), "sess", h.Process, false); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 3*time.Second, "the grandchild's death", func() bool { return len(findByCmdline("sleep", marker)) == 0 })
		})
	}
	// A background command of an unconfined builtin "process" likewise,
	// stopped by its SIGINT.
	t.Run("command", func(t *testing.T) {
		marker := "31.4158" + strconv.Itoa(os.Getpid())
		s := newFixture(t).supervisor(t)
		st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: `setsid sleep ` + marker + ` </dev/null >/dev/null 2>&1 & exec sleep 30`, Wait: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 5*time.Second, "the setsid grandchild", func() bool { return len(findByCmdline("sleep", marker)) == 1 })
		if _, err := s.Stop(ctxT(t), "sess", st.Process, false); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 3*time.Second, "the grandchild's death", func() bool { return len(findByCmdline("sleep", marker)) == 0 })
	})
}
