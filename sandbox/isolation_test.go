package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// The caller's environment never reaches a sandboxed tool, not even
// through /proc/*/environ (bwrap is pid 1 inside; the landlock helper is
// the tool's parent). Twin: a variable the Command passes is seen, and
// under None the same scan finds the caller's canary (so the scan works).
func TestCallerEnvironmentInvisible(t *testing.T) {
	if os.Getenv(canaryVar) != canaryValue {
		t.Fatal("TestMain did not set the canary")
	}
	script := `env | grep -c c4n4ry; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f"; done 2>/dev/null | grep -c c4n4ry`
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			r := runSh(t, pin(&Spec{Mechanism: m}), script)
			if r.stdout != "0\n0\n" {
				t.Fatalf("canary seen inside (counts %q)", r.stdout)
			}
			r = runSh(t, pin(&Spec{Mechanism: m}), script, "PASSED=passed-c4n4ry")
			if r.stdout == "0\n0\n" {
				t.Fatalf("a declared variable is not seen (counts %q)", r.stdout)
			}
		})
	}
	t.Run("none-twin", func(t *testing.T) {
		r := runSh(t, nil, script)
		if n, _ := strconv.Atoi(strings.Fields(r.stdout + " 0 0")[1]); n == 0 {
			t.Fatalf("the /proc scan did not find the caller's canary under None: %q", r.stdout)
		}
	})
}

// A descriptor the caller inherited (opened without close-on-exec before
// Init) never reaches a child, nor can a sandboxed tool reach it through
// /proc. Twin: a descriptor left inheritable after Init does reach a None
// child, so the check sees leaks.
func TestCallerDescriptorInvisible(t *testing.T) {
	dir := t.TempDir()
	openInheritable := func(name string) int {
		fd, err := unix.Open(filepath.Join(dir, name), unix.O_CREAT|unix.O_RDWR, 0o600)
		must(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	canary := openInheritable("canary-fd")
	helper.MarkCloexec() // what Init does at start-up
	isOpen := func(fd int) string {
		return fmt.Sprintf(`if { true <&%d; } 2>/dev/null; then echo open; else echo closed; fi`, fd)
	}
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			r := runSh(t, pin(&Spec{Mechanism: m}), isOpen(canary)+"; "+isOpen(2))
			if r.stdout != "closed\nopen\n" {
				t.Fatalf("descriptor %d in the child: %q", canary, r.stdout)
			}
			if m == None {
				return // a None child sees the caller's /proc
			}
			r = runSh(t, pin(&Spec{Mechanism: m}), `ls -l /proc/[0-9]*/fd/ 2>/dev/null | grep -c canary-fd`)
			if r.stdout != "0\n" {
				t.Fatalf("descriptor %d seen through /proc (%q)", canary, r.stdout)
			}
		})
	}
	t.Run("leak-twin", func(t *testing.T) {
		// A child started by os/exec alone inherits it: the check sees leaks.
		leak := openInheritable("leak-fd")
		out, err := exec.Command("/bin/sh", "-c", isOpen(leak)+fmt.Sprintf("; readlink /proc/self/fd/%d", leak)).Output()
		unix.Close(leak)
		if err != nil || !strings.HasPrefix(string(out), "open\n") || !strings.Contains(string(out), "leak-fd") {
			t.Fatalf("an inheritable descriptor did not reach a plain child: %q %v", out, err)
		}
	})
}

// Every child: stdin a pipe even when none is given, its own session and
// process group, and never the caller's terminal.
func TestChildHygiene(t *testing.T) {
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			r := runSh(t, pin(&Spec{Mechanism: m}), `test -t 0 || echo notty; cat; echo eof`)
			if r.stdout != "notty\neof\n" {
				t.Fatalf("stdin: %q", r.stdout)
			}
			if m == Landlock {
				return // no /proc under landlock
			}
			r = runSh(t, pin(&Spec{Mechanism: m}), `readlink /proc/self/fd/0`)
			if !strings.HasPrefix(r.stdout, "pipe:") {
				t.Fatalf("stdin is %q, want a pipe", r.stdout)
			}
		})
	}
	// Under None the child is the reaper (the sandbox helper) and the tool
	// its child, in the helper's session and process group.
	p, out, _ := startSh(t, nil, `echo $$; cut -d' ' -f4,5,6 /proc/$$/stat`)
	code, _ := p.Wait()
	f := strings.Fields(out.String())
	self := strconv.Itoa(p.Pid())
	if code != 0 || len(f) != 4 || f[1] != self || f[2] != self || f[3] != self {
		t.Fatalf("pid, ppid, pgid, sid = %v, want the parent, group and session %d", f, p.Pid())
	}
	if sid, _ := unix.Getsid(0); strconv.Itoa(sid) == f[3] {
		t.Fatal("the child shares the caller's session")
	}

	tty := openPTY(t)
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		requireMechanism(t, m)
		var errb strings.Builder
		p, err := Start(pin(&Spec{Mechanism: m}), Command{Path: "/bin/sh", Args: []string{"-c", `test -t 0 && echo tty0 >&2; test -t 1 && echo tty1 >&2; test -t 2 && echo tty2 >&2; echo done >&2`},
			Stdin: tty, Stdout: tty, Stderr: &errb})
		must(t, err)
		p.Wait()
		if errb.String() != "done\n" {
			t.Fatalf("%s: the child got the terminal: %q", m, errb.String())
		}
	}
	// Twin: the same probe sees a terminal handed over directly.
	var errb strings.Builder
	c := exec.Command("/bin/sh", "-c", `test -t 1 && echo tty1 >&2`)
	c.Stdout, c.Stderr = tty, &errb
	if err := c.Run(); err != nil || errb.String() != "tty1\n" {
		t.Fatalf("a direct terminal was not seen: %v %q", err, errb.String())
	}
}

// A tool never has a controlling terminal, under every mechanism (None
// included): run by a toolbox that has one (an operator's shell), it
// cannot open /dev/tty to read from or type into the operator's terminal
// (issue 10 #12). Twin: a child of the same toolbox started by os/exec,
// in toolbox's session, opens it.
func TestNoControllingTerminal(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tty := openPTY(t)
			// The fake toolbox leads a session whose controlling
			// terminal is tty (Setctty on its stdin).
			c := exec.Command(exe, testToolArg, "ctty", string(m))
			c.Stdin = tty
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			out, err := c.CombinedOutput()
			if err != nil || string(out) != "tool: no tty\ntwin: tty\n" {
				t.Fatalf("fake toolbox: %v\n%s", err, out)
			}
		})
	}
}

// cttyProbe is the fake toolbox of TestNoControllingTerminal: it runs the
// same /dev/tty probe as a tool under m and as a plain child.
func cttyProbe(m Mechanism) int {
	const probe = `if (exec 3</dev/tty) 2>/dev/null; then echo tty; else echo no tty; fi`
	var out strings.Builder
	p, err := Start(pin(&Spec{Mechanism: m}), Command{Path: "/bin/sh", Args: []string{"-c", probe}, Stdout: &out})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if _, err := p.Wait(); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Printf("tool: %s", out.String())
	twin, err := exec.Command("/bin/sh", "-c", probe).Output()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Printf("twin: %s", twin)
	return 0
}

// openPTY returns the terminal side of a new pseudo-terminal.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	must(t, unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	must(t, err)
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	must(t, err)
	t.Cleanup(func() { pts.Close() })
	return pts
}

// A sandboxed tool cannot signal toolbox (nor, under landlock, its own
// helper): root inside is no root outside. Twin: under None it can.
func TestToolCannotSignalToolbox(t *testing.T) {
	script := fmt.Sprintf(`kill -0 %d && echo reached; kill -0 $PPID && echo parent`, os.Getpid())
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			r := runSh(t, pin(&Spec{Mechanism: m}), script)
			switch {
			case m == None && r.stdout != "reached\nparent\n":
				t.Fatalf("twin: a None tool could not signal toolbox: %q %q", r.stdout, r.stderr)
			case m == Bwrap && strings.Contains(r.stdout, "reached"):
				t.Fatalf("a bwrap tool signalled toolbox: %q", r.stdout)
			case m == Landlock && r.stdout != "":
				t.Fatalf("a landlock tool signalled toolbox or its helper: %q", r.stdout)
			}
		})
	}
}

// A sandboxed tool cannot change the resource limits of a process outside
// its sandbox: prlimit64 on another pid needs only the same uid (no
// capability, no Landlock right, no signal scope), so a landlock tool as
// root lowered RLIMIT_NOFILE of toolbox, its daemon, other tools' reapers
// or any root process of the host. Twin: the tool still sets its own
// limits (ulimit, `prlimit CMD`), and under None (unconfined) the call
// reaches the process, so the check would see it.
func TestToolCannotChangeLimitsOfOthers(t *testing.T) {
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			victim := exec.Command("sleep", "60")
			must(t, victim.Start())
			t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
			pid := victim.Process.Pid
			script := fmt.Sprintf(`prlimit --pid %d --nofile=7:7 2>/dev/null && echo changed
ulimit -n 9 && ulimit -n
prlimit --nofile=8:8 sh -c 'ulimit -n'`, pid)
			r := runSh(t, pin(&Spec{Mechanism: m}), script)
			limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
			must(t, err)
			changed := regexp.MustCompile(`Max open files\s+7\s+7`).Match(limits)
			if m == None {
				if !changed || !strings.HasPrefix(r.stdout, "changed\n") {
					t.Fatalf("twin: an unconfined tool did not reach the process: %q %q", r.stdout, r.stderr)
				}
				return
			}
			if changed || strings.Contains(r.stdout, "changed") {
				t.Fatalf("a %s tool changed the limits of process %d outside its sandbox: %q", m, pid, r.stdout)
			}
			if r.stdout != "9\n8\n" {
				t.Fatalf("twin: the tool could not set its own limits: %q %q", r.stdout, r.stderr)
			}
		})
	}
}

// A sandboxed tool cannot change the scheduling of a process outside its
// sandbox: setpriority, sched_setaffinity and ioprio_set on another pid
// need only the same uid when the target holds no capability, which is
// every other tool running as that run_as user (and, as root, every
// bwrap tool's process). Twin: nice, taskset and ionice of the tool's own
// commands still work.
func TestToolCannotRescheduleOthers(t *testing.T) {
	requireRoot(t)
	nobody, err := LookupIdentity("nobody", "")
	if err != nil {
		testenv.Unavailable(t, "no nobody user: %v", err)
	}
	for _, m := range []Mechanism{None, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			victim := exec.Command("sleep", "60")
			victim.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody.UID, Gid: nobody.GID}}
			must(t, victim.Start())
			t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
			pid := victim.Process.Pid
			script := fmt.Sprintf(`renice -n 19 -p %[1]d >/dev/null 2>&1 && echo reniced
taskset -p 1 %[1]d >/dev/null 2>&1 && echo pinned
ionice -c 3 -p %[1]d >/dev/null 2>&1 && echo ioniced
nice -n 5 sh -c 'echo own nice'
taskset 1 sh -c 'echo own affinity'
ionice -c 3 sh -c 'echo own io'`, pid)
			spec := pin(&Spec{Mechanism: m})
			spec.RunAs = nobody
			r := runSh(t, spec, script)
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			must(t, err)
			fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
			niced := fields[16] != "0" // field 19 of stat: nice
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			must(t, err)
			pinned := regexp.MustCompile(`Cpus_allowed_list:\s+0\n`).Match(status) && runtime.NumCPU() > 1
			const own = "own nice\nown affinity\nown io\n"
			if m == None {
				if !niced || r.stdout != "reniced\npinned\nioniced\n"+own {
					t.Fatalf("twin: an unconfined tool did not reach the process: %q %q", r.stdout, r.stderr)
				}
				return
			}
			if niced || pinned || r.stdout != own {
				t.Fatalf("a %s tool rescheduled process %d outside its sandbox (niced %v, pinned %v): %q %q", m, pid, niced, pinned, r.stdout, r.stderr)
			}
		})
	}
}
