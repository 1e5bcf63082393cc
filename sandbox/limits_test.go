package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/testenv"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// Resource limits (issue 10, point 10): every limit stops its attack under
// every mechanism it applies to, and the same tool within the limit works.
// The attacks are small (a few MiB): the limits in these tests are small
// too, so nothing big ever reaches the disk or the host's memory.

const mib = 1 << 20

// limitToolArg makes the test binary a tool that opens files:
// [exe, limitToolArg, "open", N] opens /dev/null N times and prints how
// many it got and the error that stopped it.
const limitToolArg = "__sandbox-limit-tool"

func init() {
	if len(os.Args) == 4 && os.Args[1] == limitToolArg && os.Args[2] == "open" {
		n, _ := strconv.Atoi(os.Args[3])
		var fs []*os.File
		var err error
		for len(fs) < n {
			var f *os.File
			if f, err = os.Open("/dev/null"); err != nil {
				break
			}
			fs = append(fs, f)
		}
		fmt.Printf("opened %d\n", len(fs))
		if err != nil {
			fmt.Printf("error: %v\n", err)
			unix.Exit(1)
		}
		unix.Exit(0)
	}
}

// limitSpec is tr's spec under m (None: no confinement, Work is just a
// directory) with limits l.
func limitSpec(tr tree, m Mechanism, l Limits) *Spec {
	s := tr.spec(m)
	if m == None {
		s = &Spec{Mechanism: None}
	}
	s.Limits = l
	return s
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// A tool writing past file_size into a write grant is stopped at the
// limit: EFBIG when it ignores SIGXFSZ, killed by SIGXFSZ otherwise. The
// file on the host holds exactly the limit. Twin: a smaller file is fine.
func TestFileSizeStopsWrites(t *testing.T) {
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			spec := limitSpec(tr, m, Limits{FileSize: mib})
			r := runSh(t, spec, `trap '' XFSZ; head -c 3145728 /dev/zero > "$WORK/big"`, tr.env()...)
			if r.code == 0 || !strings.Contains(r.stderr, "File too large") {
				t.Errorf("writing 3 MiB past a 1 MiB file_size: exit %d, stderr %q (want EFBIG)", r.code, r.stderr)
			}
			if n := size(t, tr.Work+"/big"); n != mib {
				t.Errorf("the file holds %d bytes, want the limit, %d", n, mib)
			}
			r = runSh(t, spec, `head -c 3145728 /dev/zero > "$WORK/big2"`, tr.env()...)
			if r.code != 128+int(syscall.SIGXFSZ) {
				t.Errorf("a writer that keeps SIGXFSZ: exit %d, want %d (stderr %q)", r.code, 128+int(syscall.SIGXFSZ), r.stderr)
			}
			// Positive twin.
			r = runSh(t, spec, `head -c 524288 /dev/zero > "$WORK/small"`, tr.env()...)
			if r.code != 0 || size(t, tr.Work+"/small") != 524288 {
				t.Fatalf("writing 512 KiB under a 1 MiB file_size: exit %d, stderr %q", r.code, r.stderr)
			}
		})
	}
}

// Under bwrap every tmpfs the tool can write is sized by tmp_size: its
// private /tmp and /dev/shm fill up (ENOSPC) at the limit, and the root
// and the rest of /dev are read-only. Without the sizes each was half the RAM.
// Twin: writing within the limit works.
func TestTmpSizeBoundsEveryTmpfs(t *testing.T) {
	requireMechanism(t, Bwrap)
	tr := newTree(t)
	spec := limitSpec(tr, Bwrap, Limits{TmpSize: mib})
	spec.TmpPrivate = true
	// The root is a sized tmpfs too, but read-only once every mount is in
	// place (TestBwrapRootReadOnly): nothing can fill it.
	if r := runSh(t, spec, `echo x > /big`); r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") {
		t.Errorf("writing into /: exit %d, stderr %q (want EROFS)", r.code, r.stderr)
	}
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		f := filepath.Join(dir, "big")
		r := runSh(t, spec, `head -c 3145728 /dev/zero > `+f+`; echo "size $(wc -c < `+f+`)"`)
		if !strings.Contains(r.stderr, "No space left on device") {
			t.Errorf("%s: writing 3 MiB into a 1 MiB tmpfs: stderr %q (want ENOSPC)", dir, r.stderr)
		}
		if got := strings.TrimSpace(r.stdout); got != fmt.Sprintf("size %d", mib) {
			t.Errorf("%s: %q, want the tmpfs full at %d bytes", dir, got, mib)
		}
	}
	r := runSh(t, spec, `echo x > /dev/new`)
	if r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") {
		t.Errorf("writing into /dev: exit %d, stderr %q (want EROFS)", r.code, r.stderr)
	}
	// Positive twin: within the limit, and the devices still work.
	r = runSh(t, spec, `head -c 524288 /dev/urandom > /tmp/ok && wc -c < /tmp/ok && echo x > /dev/null && head -c 4 /dev/zero | wc -c`)
	if r.code != 0 || strings.Fields(r.stdout)[0] != "524288" {
		t.Fatalf("writing 512 KiB into a 1 MiB /tmp: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// open_files caps the descriptors of each process, and the tool cannot
// raise the hard limit. Twin: fewer files open fine.
func TestOpenFilesLimit(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			spec := &Spec{Mechanism: m, ToolDir: filepath.Dir(exe), Limits: Limits{OpenFiles: 100}}
			out := runTool(t, spec, exe, limitToolArg, "open", "1000")
			if out.code == 0 || !strings.Contains(out.stdout, "too many open files") {
				t.Errorf("opening 1000 files under open_files 100: exit %d, stdout %q", out.code, out.stdout)
			}
			var n int
			fmt.Sscanf(out.stdout, "opened %d", &n)
			if n < 90 || n > 97 {
				t.Errorf("opened %d files, want about 100 less stdin, stdout, stderr", n)
			}
			r := runSh(t, spec, `ulimit -Hn; ulimit -n 4096 && echo raised`)
			if strings.TrimSpace(r.stdout) != "100" {
				t.Errorf("hard limit: stdout %q, stderr %q (want 100, never raised)", r.stdout, r.stderr)
			}
			// Positive twin.
			out = runTool(t, spec, exe, limitToolArg, "open", "50")
			if out.code != 0 || strings.TrimSpace(out.stdout) != "opened 50" {
				t.Fatalf("opening 50 files: exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
			}
		})
	}
}

func runTool(t *testing.T, spec *Spec, path string, args ...string) result {
	t.Helper()
	return runToolIn(t, spec, "", path, args...)
}

// A CPU spinner is stopped by cpu_seconds (SIGXCPU). Twin: a tool that
// uses little CPU runs to its end.
func TestCPUSecondsStopsSpinner(t *testing.T) {
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			spec := &Spec{Mechanism: m, Limits: Limits{CPUSeconds: 1}}
			p, _, errb := startSh(t, spec, `while :; do :; done`)
			select {
			case <-p.Done():
			case <-time.After(60 * time.Second):
				_ = p.Signal(syscall.SIGKILL)
				p.Wait()
				t.Fatal("the spinner still ran after 60 s under cpu_seconds 1")
			}
			code, _ := p.Wait()
			if code != 128+int(syscall.SIGXCPU) {
				t.Errorf("spinner: exit %d, want %d (SIGXCPU); stderr %q", code, 128+int(syscall.SIGXCPU), errb.String())
			}
			// Positive twin.
			r := runSh(t, spec, `ulimit -t; i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done; echo $i`)
			if r.code != 0 || r.stdout != "1\n1000\n" {
				t.Fatalf("a short computation: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// A memory hog is refused memory beyond the limit (RLIMIT_DATA; and
// memory.max where a cgroup is delegated): awk doubling a string to 128
// MiB fails with "out of memory". Twin: 1 MiB is fine.
func TestMemoryLimitStopsHog(t *testing.T) {
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			spec := &Spec{Mechanism: m, Limits: Limits{Memory: 64 * mib}}
			hog := `awk 'BEGIN { s = "x"; for (i = 0; i < %d; i++) s = s s; print length(s) }'`
			r := runSh(t, spec, fmt.Sprintf(hog, 27))
			if r.code == 0 || !strings.Contains(r.stderr, "out of memory") {
				t.Errorf("allocating 128 MiB under memory 64MiB: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			// Positive twin.
			r = runSh(t, spec, fmt.Sprintf(hog, 20))
			if r.code != 0 || r.stdout != "1048576\n" {
				t.Fatalf("allocating 1 MiB: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// A fork bomb is stopped by processes. Without a delegated cgroup this
// machine can count the tool's processes only under bwrap for a tool that
// is not root (RLIMIT_NPROC in its own user namespace); with one (pids.max),
// under every mechanism.
func TestProcessesStopsForkBomb(t *testing.T) {
	bomb := `i=0; while [ $i -lt 60 ]; do sleep 1000 & echo started; i=$((i+1)); done`
	check := func(t *testing.T, spec *Spec) {
		t.Helper()
		r := runSh(t, spec, bomb)
		n := strings.Count(r.stdout, "started")
		if n >= 16 || n < 8 || !strings.Contains(r.stderr, "fork") {
			t.Errorf("fork bomb under processes 16: %d children started (want the limit to stop it near 16), stderr %q", n, r.stderr)
		}
		// Positive twin.
		r = runSh(t, spec, `for i in 1 2 3 4 5; do true & done; wait; echo done`)
		if r.code != 0 || r.stdout != "done\n" {
			t.Fatalf("five children under processes 16: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	}
	t.Run("bwrap-run_as", func(t *testing.T) {
		requireMechanism(t, Bwrap)
		requireRoot(t)
		uid, gid := testenv.Nobody(t)
		tr := newTree(t)
		spec := limitSpec(tr, Bwrap, Limits{Processes: 16})
		spec.RunAs = &Identity{UID: uid, GID: gid, Groups: []uint32{gid}}
		check(t, spec)
	})
	for _, m := range allMechanisms {
		t.Run(string(m)+"-cgroup", func(t *testing.T) {
			requireMechanism(t, m)
			if cg := DetectCgroup(); !cg.Pids {
				t.Skipf("no cgroup v2 pids controller here: %s", cg.PidsReason)
			}
			check(t, &Spec{Mechanism: m, Limits: Limits{Processes: 16}})
		})
	}
}

// Where nothing can count a tool's processes (uid 0 without a delegated
// cgroup; landlock and none for any uid without one), processes is
// refused at Start rather than silently not enforced.
func TestProcessesRefusedWhereNotEnforceable(t *testing.T) {
	noCgroup := CgroupSupport{PidsReason: "test: none"}
	for _, c := range []struct {
		m   Mechanism
		uid uint32
	}{{None, 0}, {Landlock, 0}, {Bwrap, 0}, {None, 65534}, {Landlock, 65534}} {
		if r := LimitsRefusal(Limits{Processes: 8}, c.m, c.uid, noCgroup); r == nil || r.Field != FieldLimitProcesses {
			t.Errorf("%s as uid %d without cgroup: %v, want a refusal of %s", c.m, c.uid, r, FieldLimitProcesses)
		}
		if r := LimitsRefusal(Limits{Processes: 8}, c.m, c.uid, CgroupSupport{Dir: "/x", Pids: true}); r != nil {
			t.Errorf("%s as uid %d with a pids cgroup: %v", c.m, c.uid, r)
		}
	}
	// The twin: bwrap for another uid counts in its user namespace.
	if r := LimitsRefusal(Limits{Processes: 8}, Bwrap, 65534, noCgroup); r != nil {
		t.Errorf("bwrap as nobody: %v", r)
	}
	if DetectCgroup().Pids || os.Geteuid() != 0 {
		return
	}
	for _, m := range []Mechanism{None, Landlock} {
		_, err := Start(pin(&Spec{Mechanism: m, Limits: Limits{Processes: 8}}), Command{Path: "/bin/true"})
		wantRefusal(t, err, FieldLimitProcesses)
	}
}

// Limits that can only be mistakes are refused, naming the field.
func TestLimitsTooSmallRefused(t *testing.T) {
	_, err := Start(&Spec{Limits: Limits{OpenFiles: 10}}, Command{Path: "/bin/true"})
	wantRefusal(t, err, FieldLimitOpenFiles)
	_, err = Start(&Spec{Limits: Limits{Memory: mib}}, Command{Path: "/bin/true"})
	wantRefusal(t, err, FieldLimitMemory)
}

// Cmd (the plugin path) applies the same limits; under bwrap the sandbox
// is released by a goroutine once its pid 1 has them.
func TestCmdAppliesLimits(t *testing.T) {
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			cmd, release, err := Cmd(pin(&Spec{Mechanism: m, Limits: Limits{FileSize: mib, OpenFiles: 100}}), Command{
				Path: "/bin/sh", Args: []string{"-c", `ulimit -f; ulimit -n; ulimit -c`}, Env: []string{"PATH=/usr/bin:/bin"},
			})
			must(t, err)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err = cmd.Start()
			release()
			must(t, err)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("%v: stderr %q", err, errb.String())
			}
			// ulimit -f counts 512-byte blocks.
			if out.String() != "2048\n100\n0\n" {
				t.Fatalf("limits seen by the tool: %q, want 2048 blocks, 100 files, no core; stderr %q", out.String(), errb.String())
			}
		})
	}
}

// The limits wrapper under none reports a missing executable as Start's
// error, as exec does without it.
func TestLimitsUnderNoneKeepStartErrors(t *testing.T) {
	_, err := Start(&Spec{Limits: Limits{FileSize: mib}}, Command{Path: "/nonexistent/tool"})
	if !errors.Is(err, ErrStartFailed) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want ErrStartFailed and ErrNotExist", err)
	}
	r := runSh(t, &Spec{Limits: Limits{FileSize: mib}}, `echo "$X"; ulimit -f`, "X=kept")
	if r.code != 0 || r.stdout != "kept\n2048\n" {
		t.Fatalf("a tool under the wrapper: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// A relative path is relative to Dir, as exec has it.
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\necho here\n"), 0o755))
	out := runToolIn(t, &Spec{Limits: Limits{FileSize: mib}}, dir, "./tool")
	if out.code != 0 || out.stdout != "here\n" {
		t.Fatalf("./tool in Dir: exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
	}
	// So it is for the limits wrapper alone (a program without Init).
	initDone.Store(false)
	defer initDone.Store(true)
	out = runToolIn(t, &Spec{Limits: Limits{FileSize: mib}}, dir, "./tool")
	if out.code != 0 || out.stdout != "here\n" {
		t.Fatalf("./tool in Dir without Init: exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
	}
}

// runToolIn runs path with args in dir under spec.
func runToolIn(t *testing.T, spec *Spec, dir, path string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	p, err := Start(pin(spec), Command{Path: path, Args: args, Dir: dir, Stdout: &out, Stderr: &errb})
	must(t, err)
	code, err := p.Wait()
	must(t, err)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// A root tool under none cannot raise its hard limits back: the wrapper
// drops CAP_SYS_RESOURCE before it execs.
func TestNoneCannotRaiseLimits(t *testing.T) {
	requireRoot(t)
	r := runSh(t, &Spec{Limits: Limits{OpenFiles: 100}}, `ulimit -Hn 4096 && echo raised; ulimit -Hn`)
	if strings.Contains(r.stdout, "raised") || strings.TrimSpace(r.stdout) != "100" {
		t.Fatalf("root under none raised its hard limit: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// cgroupParent returns a cgroup v2 directory this test may create cgroups
// in: the delegated one, else (as root) a new child of a cgroup v2 mount
// (/sys/fs/cgroup, or the hybrid layout's /sys/fs/cgroup/unified, which
// has no memory or pids controller but places and kills all the same).
func cgroupParent(t *testing.T) string {
	t.Helper()
	if cg := DetectCgroup(); cg.Dir != "" {
		return cg.Dir
	}
	requireRoot(t)
	mount := ""
	for _, m := range []string{cgroupMount, cgroupMount + "/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(m, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			mount = m
			break
		}
	}
	if mount == "" {
		testenv.Unavailable(t, "no cgroup v2 mount here: %s", DetectCgroup().Reason)
	}
	dir := filepath.Join(mount, fmt.Sprintf("toolbox-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Rmdir(dir) })
	return dir
}

// Every process of a call runs in the call's cgroup from its start (the
// tool itself under landlock and none, bwrap and its sandbox under bwrap),
// and when the call ends whatever is left in it (a setsid grandchild,
// which a process group kill misses under none) is killed and the cgroup
// removed.
func TestCallCgroupPlacesAndCleansUp(t *testing.T) {
	parent := cgroupParent(t)
	for i, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			var cg *callCgroup
			plan := func(s *Spec, m Mechanism) (*limitPlan, error) {
				lp, err := planLimits(s, m)
				if err != nil {
					return nil, err
				}
				if lp.cg == nil {
					if lp.cg, err = newCallCgroup(CgroupSupport{Dir: parent}, Limits{}, 0); err != nil {
						return nil, err
					}
				}
				cg = lp.cg
				return lp, nil
			}
			secs := fmt.Sprintf("%d.%d", 920+i, os.Getpid()%1000)
			stdinR, stdinW := io.Pipe()
			var out, errb bytes.Buffer
			p, err := startWith(pin(&Spec{Mechanism: m, Limits: Limits{FileSize: mib}}), Command{
				Path:  "/bin/sh",
				Args:  []string{"-c", `setsid sleep ` + secs + ` </dev/null >/dev/null 2>&1 & read x`},
				Env:   []string{"PATH=/usr/bin:/bin"},
				Stdin: stdinR, Stdout: &out, Stderr: &errb,
			}, plan)
			must(t, err)
			inCgroup := func() bool {
				data, _ := os.ReadFile(filepath.Join(cg.dir, "cgroup.procs"))
				for _, f := range strings.Fields(string(data)) {
					cmd, _ := os.ReadFile("/proc/" + f + "/cmdline")
					if string(cmd) == "sleep\x00"+secs+"\x00" {
						return true
					}
				}
				return false
			}
			if !eventually(inCgroup) {
				t.Errorf("the tool's grandchild is not in the call's cgroup %s", cg.dir)
			}
			stdinW.Close()
			if _, err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(cg.dir); !os.IsNotExist(err) {
				t.Errorf("the call's cgroup %s is still there: %v", cg.dir, err)
			}
			if !eventually(func() bool { return len(processesWithArgs("sleep", secs)) == 0 }) {
				t.Errorf("the setsid grandchild outlived the call (stderr %q)", errb.String())
			}
		})
	}
}

// The values written into a call's cgroup.
func TestCallCgroupValues(t *testing.T) {
	dir := t.TempDir()
	c, err := newCallCgroup(CgroupSupport{Dir: dir, Memory: true, Pids: true}, Limits{Memory: 128 * mib, Processes: 10, FileSize: mib}, 2)
	must(t, err)
	defer c.fd.Close()
	for file, want := range map[string]string{"memory.max": "134217728", "memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "12"} {
		if b, _ := os.ReadFile(filepath.Join(c.dir, file)); string(b) != want {
			t.Errorf("%s = %q, want %q", file, b, want)
		}
	}
	c2, err := newCallCgroup(CgroupSupport{Dir: dir, Memory: false, Pids: true}, Limits{Memory: 128 * mib}, 0)
	must(t, err)
	defer c2.fd.Close()
	if _, err := os.Stat(filepath.Join(c2.dir, "memory.max")); err == nil {
		t.Error("memory.max written without the memory controller")
	}
}

// DetectCgroup says why a host without usable cgroup v2 has none.
func TestDetectCgroupReason(t *testing.T) {
	var st unix.Statfs_t
	if unix.Statfs(cgroupMount, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		t.Skip("cgroup v2 is mounted here")
	}
	cg := DetectCgroup()
	if cg.Dir != "" || cg.Pids || cg.Memory || !strings.Contains(cg.Reason, "not a cgroup v2 mount") || cg.PidsReason == "" {
		t.Fatalf("%+v", cg)
	}
	s := detectCgroup(t.TempDir(), "", "/proc/self/cgroup")
	if s.Dir != "" || !strings.Contains(s.Reason, "not a cgroup v2 mount") {
		t.Fatalf("a plain directory: %+v", s)
	}
}

// Positive twin of every attack above: real coding tools run under the
// toolbox file's defaults (git committing, the Go toolchain loading
// packages, grep searching) with a private /tmp under bwrap.
func TestRealToolsUnderDefaultLimits(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	defaults := Limits{Memory: 4 << 30, FileSize: 256 << 20, OpenFiles: 4096, TmpSize: 256 << 20}
	script := `set -e
cd "$WORK"
if [ -n "$NOGIT" ]; then mkdir repo && cd repo; else git init -q repo && cd repo; fi
printf 'module example.com/m\n\ngo 1.21\n' > go.mod
printf 'package m\n\nfunc F() int { return 1 }\n' > m.go
if [ -n "$NOGIT" ]; then echo 1; else
git -c user.name=t -c user.email=t@example.com add -A
git -c user.name=t -c user.email=t@example.com commit -qm first
git log --oneline | wc -l
fi
grep -rn 'func F' .
"$GO" list -deps . | tail -n 1
head -c 1048576 /dev/zero > "${TMPDIR:-/tmp}/scratch" && wc -c < "${TMPDIR:-/tmp}/scratch"`
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			spec := limitSpec(tr, m, defaults)
			if m != None {
				spec.Read = append(spec.Read, filepath.Dir(filepath.Dir(goBin)))
			}
			spec.TmpPrivate = m == Bwrap
			if m == Landlock {
				spec.SharedTmp = sharedTmp(t) // the host's /tmp is never granted
			}
			// GIT_CONFIG_NOSYSTEM: landlock denies /etc/gitconfig (EACCES, fatal
			// to git) where bwrap has none (ENOENT); not a matter of limits.
			env := append(tr.env(), "GO="+goBin, "HOME="+tr.Work, "GIT_CONFIG_NOSYSTEM=1", "GOCACHE="+tr.Work+"/cache", "GOPATH="+tr.Work+"/gopath", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off")
			if m == None {
				env = append(env, "TMPDIR="+tr.Work)
			}
			if m == Landlock && os.Geteuid() == 0 {
				// git chmods its lock files, which a root tool under
				// landlock may not do (the owner-operations rule,
				// TestLandlockRootOwnerOps): not a matter of limits.
				env = append(env, "NOGIT=1")
			}
			r := runSh(t, spec, script, env...)
			want := "1\n./m.go:3:func F() int { return 1 }\nexample.com/m\n1048576\n"
			if r.code != 0 || r.stdout != want {
				t.Fatalf("exit %d, stdout %q (want %q), stderr %q", r.code, r.stdout, want, r.stderr)
			}
		})
	}
}

// The landlock helper stays unlimited while its tool runs limited: a
// helper holding a small memory limit (which it could not raise back
// without CAP_SYS_RESOURCE) could no longer map memory to reap the tool.
func TestLandlockHelperKeepsNoLimits(t *testing.T) {
	requireMechanism(t, Landlock)
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	p, err := Start(&Spec{Mechanism: Landlock, Limits: Limits{Memory: 64 * mib}}, Command{
		Path: "/bin/sh", Args: []string{"-c", "read x"}, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: stdinR,
	})
	must(t, err)
	dataLimit := func(pid int) string {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Max data size") {
				return strings.Join(strings.Fields(l)[3:5], " ")
			}
		}
		return ""
	}
	var tool string
	eventually(func() bool {
		for pid := range helper.LiveDescendants(p.Pid()) {
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cmd), "/bin/sh\x00") {
				tool = dataLimit(pid)
			}
		}
		return tool != ""
	})
	helper := dataLimit(p.Pid())
	stdinW.Close()
	p.Wait()
	if tool != "67108864 67108864" || helper != "unlimited unlimited" {
		t.Fatalf("data limit: tool %q, helper %q; want the tool limited, the helper not", tool, helper)
	}
}

// A tool running as uid 0 under bwrap cannot change the host kernel's
// settings: /proc/sys, /proc/sysrq-trigger and /proc/pressure are
// read-only (a sysctl takes only uid 0 to write, and bwrap 0.8 leaves
// /proc/sys writable). The attack writes swappiness's own value back, so a
// failure of the defence changes nothing on the host. Twin: the tool reads
// its settings and its own /proc.
func TestBwrapKernelSettingsReadOnly(t *testing.T) {
	requireMechanism(t, Bwrap)
	testenv.NeedRoot(t) // the attack needs the tool's uid 0 to be the host's
	tr := newTree(t)
	for _, netNone := range []bool{true, false} {
		spec := tr.spec(Bwrap)
		spec.NetNone = netNone
		r := runSh(t, spec, `v=$(cat /proc/sys/vm/swappiness) && echo "$v" > /proc/sys/vm/swappiness; echo "sysctl $?"
for f in /proc/sysrq-trigger /proc/pressure/cpu; do [ -e $f ] || continue; : > $f; echo "$f $?"; done`)
		if !strings.Contains(r.stdout, "sysctl 2") && !strings.Contains(r.stdout, "sysctl 1") {
			t.Errorf("net none %v: writing a sysctl as uid 0: stdout %q stderr %q (want it refused)", netNone, r.stdout, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if strings.HasPrefix(line, "/proc/") && strings.HasSuffix(line, " 0") {
				t.Errorf("net none %v: %s: written (want read-only)", netNone, line)
			}
		}
		if !strings.Contains(r.stderr, "Read-only file system") {
			t.Errorf("net none %v: stderr %q, want EROFS", netNone, r.stderr)
		}
		r = runSh(t, spec, `cat /proc/sys/kernel/ostype /proc/self/stat >/dev/null && cat /proc/sys/kernel/ostype`)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "Linux" {
			t.Errorf("net none %v: reading /proc: exit %d, stdout %q, stderr %q", netNone, r.code, r.stdout, r.stderr)
		}
	}
}
