package sandbox

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// limitsOf reads /proc/PID/limits: "soft hard" by the limit's name there
// ("Max data size"), nil when it cannot be read.
func limitsOf(pid int) map[string]string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(l, "  ")
		if f := strings.Fields(rest); ok && len(f) >= 2 {
			out[name] = f[0] + " " + f[1]
		}
	}
	return out
}

// heldTool starts a tool that reads its stdin under spec and returns the
// process, the pid of the tool (the shell below the helper) and the
// writer whose closing ends the tool. The stdin is an *os.File, handed to
// the tool as it is: no copy of it keeps Wait waiting.
func heldTool(t *testing.T, spec *Spec) (*Process, int, io.Closer) {
	t.Helper()
	stdinR, stdinW, err := os.Pipe()
	must(t, err)
	defer stdinR.Close()
	p, err := Start(spec, Command{
		Path: "/bin/sh", Args: []string{"-c", "read x; exit 0"}, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: stdinR,
	})
	must(t, err)
	tool := 0
	eventually(func() bool {
		for pid := range helper.LiveDescendants(p.Pid()) {
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cmd), "/bin/sh\x00") {
				tool = pid
			}
		}
		return tool != 0
	})
	if tool == 0 {
		stdinW.Close()
		p.Wait()
		t.Fatal("the tool did not show up below the helper")
	}
	return p, tool, stdinW
}

// capSysResource says whether pid holds CAP_SYS_RESOURCE in its bounding
// or effective set.
func capSysResource(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		name, v, _ := strings.Cut(l, ":")
		if name != "CapBnd" && name != "CapEff" {
			continue
		}
		set, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		must(t, err)
		if set&(1<<24) != 0 { // CAP_SYS_RESOURCE
			return true
		}
	}
	return false
}

// The defaults (4 GiB of memory, 256 MiB files, 4096 descriptors) are
// limits the sandbox helper can live with: it sets them on itself and the
// tool inherits them at fork, with CAP_SYS_RESOURCE dropped, instead of
// starting the limits wrapper (a Go process start per call). Twin: a limit
// the helper could not live with (a small memory limit, cpu_seconds, which
// would count the helper's own time) is still given to the tool alone by
// the wrapper, the helper staying unlimited.
func TestHelperHoldsGenerousLimits(t *testing.T) {
	for _, m := range []Mechanism{None, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			p, tool, stop := heldTool(t, &Spec{Mechanism: m, Limits: Limits{Memory: 4 << 30, FileSize: 256 * mib, OpenFiles: 4096}})
			helper, got := limitsOf(p.Pid()), limitsOf(tool)
			dropped := !capSysResource(t, tool)
			stop.Close()
			if code, err := p.Wait(); code != 0 || err != nil {
				t.Fatalf("exit %d, %v", code, err)
			}
			for name, want := range map[string]string{
				"Max data size": "4294967296 4294967296", "Max file size": "268435456 268435456",
				"Max open files": "4096 4096", "Max core file size": "0 0",
			} {
				if got[name] != want || helper[name] != want {
					t.Errorf("%s: tool %q, helper %q; want %q for both", name, got[name], helper[name], want)
				}
			}
			if !dropped {
				t.Error("the tool holds CAP_SYS_RESOURCE: it could raise its hard limits")
			}

			for _, l := range []Limits{{Memory: 64 * mib}, {Memory: 4 << 30, CPUSeconds: 60}} {
				p, tool, stop := heldTool(t, &Spec{Mechanism: m, Limits: l})
				helper, got := limitsOf(p.Pid()), limitsOf(tool)
				stop.Close()
				p.Wait()
				name, want := "Max data size", strconv.FormatUint(l.Memory, 10)
				if got[name] != want+" "+want || helper[name] != "unlimited unlimited" {
					t.Errorf("limits %s: data limit of the tool %q, of the helper %q; want the tool limited, the helper not", l, got[name], helper[name])
				}
			}
		})
	}
}

// With the helper holding the limits, the tool's output still arrives
// byte for byte (written just before it exits), and a helper killed with
// SIGKILL takes its tool down (parent-death signal) and reports the kill.
func TestHelperHeldLimitsFaults(t *testing.T) {
	for _, m := range []Mechanism{None, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			spec := &Spec{Mechanism: m, Limits: Limits{Memory: 4 << 30, FileSize: 256 * mib, OpenFiles: 4096}}
			r := runSh(t, spec, `yes 0123456789abcde | head -c 4000000`)
			if want := strings.Repeat("0123456789abcde\n", 250000); r.code != 0 || r.stdout != want {
				t.Fatalf("output: exit %d, %d bytes (want %d, exactly the tool's), stderr %q", r.code, len(r.stdout), len(want), r.stderr)
			}

			p, tool, stop := heldTool(t, spec)
			defer stop.Close()
			must(t, syscall.Kill(p.Pid(), syscall.SIGKILL))
			code, err := p.Wait()
			if err != nil || code != 128+int(syscall.SIGKILL) {
				t.Fatalf("after SIGKILL of the helper: exit %d, %v; want %d", code, err, 128+int(syscall.SIGKILL))
			}
			dead := func() bool { st, ok := helper.ReadStat(tool); return !ok || st.State == 'Z' || st.State == 'X' }
			if !eventually(dead) {
				syscall.Kill(tool, syscall.SIGKILL)
				t.Fatalf("the tool (pid %d) outlived its helper", tool)
			}
		})
	}
}
