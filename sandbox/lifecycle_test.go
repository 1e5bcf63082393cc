package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func requireSetsid(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid command")
	}
}

// A grandchild that leaves the tool's session dies with the tool under
// every mechanism (None: the reaper), and the twin: a child that ends
// before the tool does delivers its output.
func TestSetsidGrandchildDiesWithTool(t *testing.T) {
	requireSetsid(t)
	for i, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			secs := fmt.Sprintf("%d.%d", 900+i, os.Getpid()%1000)
			r := runSh(t, pin(&Spec{Mechanism: m}), `setsid sleep `+secs+` </dev/null >/dev/null 2>&1 & sleep 0.2; echo started`)
			if r.stdout != "started\n" {
				t.Fatalf("tool: %q %q", r.stdout, r.stderr)
			}
			if !eventually(func() bool { return len(processesWithArgs("sleep", secs)) == 0 }) {
				killAll(processesWithArgs("sleep", secs))
				t.Fatalf("setsid grandchild still running after the tool ended: %v", processesWithArgs("sleep", secs))
			}
			r = runSh(t, &Spec{Mechanism: m}, `(setsid sh -c 'echo grandchild') & wait; echo tool`)
			if r.code != 0 || r.stdout != "grandchild\ntool\n" {
				t.Fatalf("twin: a grandchild that finished in time: exit %d, %q %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

func killAll(pids []string) {
	for _, p := range pids {
		var pid int
		if _, err := fmt.Sscan(p, &pid); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// When toolbox itself dies (crash, SIGKILL), a tool and its setsid
// grandchildren die with it: bwrap's --die-with-parent, the helper's
// parent-death signal (landlock and None). The test binary plays toolbox in a child
// process that starts the tool and exits without cleaning up.
func TestToolDiesWithToolbox(t *testing.T) {
	requireSetsid(t)
	exe, err := os.Executable()
	must(t, err)
	for i, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			secs := fmt.Sprintf("%d.%d", 920+i, os.Getpid()%1000)
			out, err := exec.Command(exe, testToolArg, "spawn", string(m)+":"+secs).CombinedOutput()
			if err != nil {
				t.Fatalf("fake toolbox: %v: %s", err, out)
			}
			if !eventually(func() bool {
				return len(processesWithArgs("sleep", secs)) == 0 && len(processesWithArgs("sleep", "6"+secs)) == 0
			}) {
				killAll(processesWithArgs("sleep", secs))
				killAll(processesWithArgs("sleep", "6"+secs))
				t.Fatalf("the tool's processes outlived toolbox")
			}
		})
	}
}

// spawnAndExit is the fake toolbox of TestToolDiesWithToolbox: it starts
// a tool with a setsid grandchild under the mechanism, waits until the
// grandchild runs, and returns without stopping anything.
func spawnAndExit(arg string) int {
	m, secs, _ := strings.Cut(arg, ":")
	_, err := Start(pin(&Spec{Mechanism: Mechanism(m)}), Command{
		Path: "/bin/sh",
		// The tool's own sleep is named from secs too: another run of
		// this test (the reaper binary's, another package's) must not
		// count as a survivor of this one.
		Args: []string{"-c", `setsid sleep ` + secs + ` </dev/null >/dev/null 2>&1 & exec sleep 6` + secs},
		Env:  []string{"PATH=/usr/bin:/bin"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if !eventually(func() bool { return len(processesWithArgs("sleep", secs)) == 1 }) {
		fmt.Fprintln(os.Stderr, "the grandchild did not start")
		return 1
	}
	return 0
}

// Killing a tool (a timeout) takes its setsid grandchildren down too.
func TestSetsidGrandchildDiesWithKill(t *testing.T) {
	requireSetsid(t)
	for i, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			secs := fmt.Sprintf("%d.%d", 910+i, os.Getpid()%1000)
			p, _, _ := startSh(t, pin(&Spec{Mechanism: m}), `setsid sleep `+secs+` </dev/null >/dev/null 2>&1 & sleep 60`)
			if !eventually(func() bool { return len(processesWithArgs("sleep", secs)) == 1 }) {
				t.Fatal("the grandchild did not start")
			}
			must(t, p.Signal(syscall.SIGKILL))
			code, err := p.Wait()
			if err != nil || code != 128+int(syscall.SIGKILL) {
				t.Fatalf("after SIGKILL: exit %d, %v", code, err)
			}
			if !eventually(func() bool { return len(processesWithArgs("sleep", secs)) == 0 }) {
				t.Fatalf("setsid grandchild survived the kill: %v", processesWithArgs("sleep", secs))
			}
			if err := p.Signal(syscall.SIGTERM); err != os.ErrProcessDone {
				t.Fatalf("Signal after exit: %v, want os.ErrProcessDone", err)
			}
		})
	}
}

// A catchable signal reaches the tool itself (not only bwrap or the
// helper), so a tool can stop cleanly; the exit code passes through.
func TestSignalReachesTool(t *testing.T) {
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			r, w, err := os.Pipe()
			must(t, err)
			defer r.Close()
			p, err := Start(pin(&Spec{Mechanism: m}), Command{
				Path:   "/bin/sh",
				Args:   []string{"-c", `trap 'echo stopping; exit 7' TERM; echo ready; sleep 60 & wait`},
				Stdout: w,
			})
			w.Close()
			must(t, err)
			buf := make([]byte, 6)
			if n, _ := r.Read(buf); string(buf[:n]) != "ready\n" {
				t.Fatalf("tool said %q", buf[:n])
			}
			start := time.Now()
			must(t, p.Signal(syscall.SIGTERM))
			code, err := p.Wait()
			rest := make([]byte, 64)
			n, _ := r.Read(rest)
			if err != nil || code != 7 || !strings.Contains(string(rest[:n]), "stopping") {
				t.Fatalf("after SIGTERM: exit %d (%v), output %q", code, err, rest[:n])
			}
			if time.Since(start) > 5*time.Second {
				t.Fatal("the tool took too long to stop")
			}
		})
	}
}

// Exit codes pass through; a tool killed by a signal reads 128+N.
func TestExitCodes(t *testing.T) {
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			if r := runSh(t, pin(&Spec{Mechanism: m}), `exit 3`); r.code != 3 {
				t.Errorf("exit 3 read as %d", r.code)
			}
			if r := runSh(t, pin(&Spec{Mechanism: m}), `kill -KILL $$`); r.code != 137 {
				t.Errorf("SIGKILL read as %d", r.code)
			}
			_, err := Start(pin(&Spec{Mechanism: m}), Command{Path: "/nonexistent/tool"})
			if !errors.Is(err, ErrStartFailed) || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a missing executable: %v", err)
			}
			_, err = Start(pin(&Spec{Mechanism: m}), Command{Path: "/etc/passwd"})
			if !errors.Is(err, ErrStartFailed) || !errors.Is(err, fs.ErrPermission) {
				t.Errorf("a file that is not executable: %v", err)
			}
		})
	}
}

// Cmd gives the same confinement as an unstarted exec.Cmd; variables a
// caller appends to its Env (as go-plugin does) reach the tool.
func TestCmdForCallersThatStartThemselves(t *testing.T) {
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			cmd, cleanup, err := Cmd(tr.spec(m), Command{
				Path: "/bin/sh",
				Args: []string{"-c", `echo "$DECLARED $APPENDED"; cat "$OUT/secret.txt"`},
				Env:  append(tr.env(), "DECLARED=declared"),
			})
			must(t, err)
			cmd.Env = append(cmd.Env, "APPENDED=appended")
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			err = cmd.Start()
			cleanup()
			must(t, err)
			err = cmd.Wait()
			first, rest, _ := strings.Cut(out.String(), "\n")
			if first != "declared appended" {
				t.Fatalf("environment: %q (stderr %q)", out.String(), errb.String())
			}
			if m == None {
				if err != nil || rest != "secret\n" {
					t.Fatalf("twin: None could not read the file: %v", err)
				}
				return
			}
			if err == nil || rest != "" {
				t.Fatalf("the tool read outside its declared paths: %q", rest)
			}
		})
	}
}
