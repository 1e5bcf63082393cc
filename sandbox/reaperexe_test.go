package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// reaperEnv names, for a re-executed test binary, the reaper binary its
// TestMain passes to UseReaper.
const reaperEnv = "TOOLBOX_TEST_REAPER"

// buildReaper builds cmd/toolbox-reaper into a temporary directory as a
// build of the same source as this test binary (go test stamps no VCS
// revision, so neither does this build).
func buildReaper(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the reaper: %v", err)
	}
	p := filepath.Join(t.TempDir(), "toolbox-reaper")
	out, err := exec.Command(goBin, "build", "-buildvcs=false", "-o", p, "../cmd/toolbox-reaper").CombinedOutput()
	if err != nil {
		t.Fatalf("building the reaper: %v\n%s", err, out)
	}
	return p
}

// useReaper points UseReaper at p for the rest of the test.
func useReaper(t *testing.T, p string) {
	UseReaper(p)
	t.Cleanup(func() { UseReaper("") })
}

// The guarantees hold below the reaper binary: the lifecycle tests (a
// setsid grandchild dies with the tool, with a kill, and with toolbox
// killed by SIGKILL; signals and exit codes pass) and the helper's limits
// tests run again, under none and landlock, in a test binary that uses
// it, and a start there is checked to run below the reaper's file.
func TestReaperBinaryKeepsTheGuarantees(t *testing.T) {
	requireSetsid(t)
	p := buildReaper(t)
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.v", "-test.run",
		"^("+strings.Join(underReaper, "|")+")$/^(none|None|landlock|Landlock)?$")
	cmd.Env = append(os.Environ(), reaperEnv+"="+p)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestReaperRunsTheTool") {
		t.Fatalf("the tests below the reaper: %v\n%s", err, out)
	}
}

// underReaper are the tests TestReaperBinaryKeepsTheGuarantees runs again
// below the reaper (their none and landlock cases).
var underReaper = []string{
	"TestReaperRunsTheTool",
	// No orphans, signals, exit codes.
	"TestSetsidGrandchildDiesWithTool", "TestToolDiesWithToolbox", "TestSetsidGrandchildDiesWithKill",
	"TestSignalReachesTool", "TestExitCodes", "TestToolCannotSignalToolbox", "TestCallerDescriptorInvisible",
	// Limits: held by the helper, and through the limits wrapper.
	"TestHelperHoldsGenerousLimits", "TestHelperHeldLimitsFaults", "TestMemoryLimitStopsHog",
	"TestCPUSecondsStopsSpinner", "TestFileSizeStopsWrites", "TestNoneCannotRaiseLimits",
	// Landlock, seccomp and IPC as the helper applies them.
	"TestReadOutsideDeclaredPathsIsDenied", "TestWriteOutsideWritablePathsIsDenied", "TestPlantedSymlinkGivesNoAccess",
	"TestDeviceNodesAreDenied", "TestRootCapabilitiesDropped", "TestSingleFileGrant",
	"TestSeccompSocketFamilies", "TestLandlockRootOwnerOps", "TestIPCNamespace", "TestTIOCSTIUnsandboxed",
}

// TestReaperRunsTheTool runs only in TestReaperBinaryKeepsTheGuarantees's
// test binary: under none and landlock the tool's parent runs the
// reaper's file, and the tool's output passes exactly.
func TestReaperRunsTheTool(t *testing.T) {
	want := os.Getenv(reaperEnv)
	if want == "" {
		t.Skip("run by TestReaperBinaryKeepsTheGuarantees")
	}
	for _, m := range []Mechanism{None, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			// The tool ends by itself: a kill as soon as the reaper is seen
			// could land, on a loaded machine, before printf ran.
			p, stdout, _ := startSh(t, &Spec{Mechanism: m, ToolDir: t.TempDir()}, `printf 'exact\n\000out'; exec sleep 3`)
			var exe string
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				exe, _ = os.Readlink("/proc/" + strconv.Itoa(p.Pid()) + "/exe")
				if exe == want {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if exe != want {
				t.Errorf("the tool's parent runs %q, want the reaper %q", exe, want)
			}
			if code, err := p.Wait(); err != nil || code != 0 {
				t.Errorf("tool: exit %d, %v; want exit 0", code, err)
			}
			if got := stdout.String(); got != "exact\n\x00out" {
				t.Errorf("output below the reaper: %q", got)
			}
		})
	}
}

// A reaper file that is there but fails a check refuses every unconfined
// start, naming the file, what is wrong and the fix; no file at all leaves
// the re-execution of the running binary (the twin: the start works).
func TestReaperRefusedWhenTampered(t *testing.T) {
	reaper := buildReaper(t)
	data, err := os.ReadFile(reaper)
	must(t, err)
	self, err := os.ReadFile(os.Args[0])
	must(t, err)
	for _, c := range []struct {
		name    string
		content []byte
		mode    os.FileMode
		want    string
	}{
		{"group writable", data, 0o775, "writable by others than its owner"},
		{"not executable", data, 0o644, "not executable"},
		{"another Go program", self, 0o755, `not "github.com/toolbox-dev/toolbox/cmd/toolbox-reaper"`},
		{"a script", []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755, "reading its build information"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "toolbox-reaper")
			must(t, os.WriteFile(p, c.content, c.mode))
			must(t, os.Chmod(p, c.mode))
			useReaper(t, p)
			_, err := Start(&Spec{Mechanism: None}, Command{Path: "/bin/sh", Args: []string{"-c", "echo ran"}})
			if err == nil {
				t.Fatal("a tampered reaper was used")
			}
			for _, w := range []string{p, c.want, "go install github.com/toolbox-dev/toolbox/cmd/...@latest"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !errors.Is(err, ErrStartFailed) {
				t.Errorf("error %v is not ErrStartFailed", err)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		useReaper(t, filepath.Join(t.TempDir(), "toolbox-reaper"))
		if r := runSh(t, &Spec{Mechanism: None}, `echo ran`); r.code != 0 || r.stdout != "ran\n" {
			t.Fatalf("without a reaper file: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("this build", func(t *testing.T) {
		useReaper(t, reaper)
		if r := runSh(t, &Spec{Mechanism: None}, `echo ran`); r.code != 0 || r.stdout != "ran\n" {
			t.Fatalf("below the reaper: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
	})
	// The attack: a file put at the reaper's path after the first start is
	// never run; later starts execute the descriptor checked then (the
	// twin is "this build" above).
	t.Run("replaced after first use", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "toolbox-reaper")
		must(t, os.WriteFile(p, data, 0o755))
		useReaper(t, p)
		if r := runSh(t, &Spec{Mechanism: None}, `echo ran`); r.code != 0 || r.stdout != "ran\n" {
			t.Fatalf("first start below the reaper: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		marker := filepath.Join(dir, "replaced-ran")
		must(t, os.Remove(p))
		must(t, os.WriteFile(p, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
		if r := runSh(t, &Spec{Mechanism: None}, `echo ran`); r.code != 0 || r.stdout != "ran\n" {
			t.Fatalf("start after the file was replaced: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the file put at the reaper's path after the first start was run")
		}
	})
}
