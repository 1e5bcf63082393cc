package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// testToolArg makes the test binary a small network client, for the net
// tests (a shell cannot open sockets): argv = [exe, testToolArg, kind,
// addr]; or, with kind "spawn", a fake toolbox (see spawnAndExit); or,
// with kind "handout", a tool that gives its stdout away (see handout).
const testToolArg = "__sandbox-test-tool"

// canaryVar is in this test process's initial environment (what
// /proc/PID/environ shows): TestMain re-executes the binary to put it there.
const canaryVar, canaryValue = "TOOLBOX_TEST_CANARY", "canary-c4n4ry"

func TestMain(m *testing.M) {
	Init() // the landlock helper re-executes this binary
	if p := os.Getenv(reaperEnv); p != "" {
		UseReaper(p) // TestReaperBinaryKeepsTheGuarantees
	}
	if len(os.Args) > 3 && os.Args[1] == testToolArg {
		// unix.Exit: a race build would sleep a second in os.Exit.
		switch os.Args[2] {
		case "spawn":
			unix.Exit(spawnAndExit(os.Args[3]))
		case "handout":
			unix.Exit(handout(os.Args[3]))
		case "ctty":
			unix.Exit(cttyProbe(Mechanism(os.Args[3])))
		}
		if os.Args[2] == probeArg {
			unix.Exit(syscallProbe(os.Args[3:]))
		}
		unix.Exit(testTool(os.Args[2], os.Args[3]))
	}
	if os.Getenv(canaryVar) == "" {
		env := append(os.Environ(), canaryVar+"="+canaryValue)
		err := syscall.Exec("/proc/self/exe", os.Args, env)
		fmt.Fprintf(os.Stderr, "re-executing with a canary variable: %v\n", err)
		os.Exit(2)
	}
	os.Exit(testenv.RunWithTmp(m))
}

// testTool connects to addr (tcp, udp, unix) and writes one line; it
// exits 0 when the connection and the write succeeded.
func testTool(kind, addr string) int {
	c, err := net.DialTimeout(kind, addr, 2*time.Second)
	if err == nil {
		_, err = c.Write([]byte("hello\n"))
		c.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sandboxed are the mechanisms that confine.
var sandboxed = []Mechanism{Bwrap, Landlock}

// requireMechanism skips when this machine cannot run m, saying why.
func requireMechanism(t testing.TB, m Mechanism) {
	t.Helper()
	s := Detect()
	switch m {
	case Bwrap:
		testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason)
	case Landlock:
		testenv.Need(t, s.Landlock, "landlock", s.LandlockReason)
	}
}

func requireRoot(t testing.TB) {
	t.Helper()
	testenv.NeedRoot(t)
}

func truePath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true on PATH")
	}
	return p
}

// result is what a tool did.
type result struct {
	code           int
	stdout, stderr string
}

// runSh runs /bin/sh -c script under spec with env (plus a PATH).
func runSh(t *testing.T, spec *Spec, script string, env ...string) result {
	t.Helper()
	p, out, errb := startSh(t, spec, script, env...)
	code, err := p.Wait()
	if err != nil {
		t.Fatalf("waiting: %v", err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func startSh(t *testing.T, spec *Spec, script string, env ...string) (*Process, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errb bytes.Buffer
	p, err := Start(pin(spec), Command{
		Path:   "/bin/sh",
		Args:   []string{"-c", script},
		Env:    append([]string{"PATH=/usr/bin:/bin"}, env...),
		Stdout: &out,
		Stderr: &errb,
	})
	if err != nil {
		t.Fatalf("starting under %s: %v", spec.Mechanism, err)
	}
	return p, &out, &errb
}

// tree is a directory layout for filesystem tests: In is declared
// readable, Work writable, Out not declared, Tool is the tool's directory.
type tree struct {
	Base, In, Out, Work, Tool string
}

// newTree builds a tree outside /tmp (tmp: shared grants all of /tmp, so
// "outside the declared paths" must be elsewhere), readable by nobody and
// with Work writable by anyone.
func newTree(t *testing.T) tree {
	t.Helper()
	var base string
	for _, parent := range []string{"/var/tmp", userCache()} {
		if parent == "" || within(parent, "/tmp") {
			continue
		}
		if d, err := os.MkdirTemp(parent, "sandbox-test-"); err == nil {
			base = d
			break
		}
	}
	if base == "" {
		t.Skip("no writable directory outside /tmp for filesystem tests")
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	tr := tree{Base: base, In: base + "/in", Out: base + "/out", Work: base + "/work", Tool: base + "/tool"}
	must(t, os.Chmod(base, 0o755))
	for _, d := range []string{tr.In, tr.Out, tr.Tool} {
		must(t, os.Mkdir(d, 0o755))
	}
	must(t, os.Mkdir(tr.Work, 0o777))
	must(t, os.Chmod(tr.Work, 0o777))
	must(t, os.WriteFile(tr.In+"/a.txt", []byte("inside\n"), 0o644))
	must(t, os.WriteFile(tr.Out+"/secret.txt", []byte("secret\n"), 0o644))
	must(t, os.WriteFile(tr.Work+"/b.txt", []byte("work\n"), 0o666))
	return tr
}

func userCache() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return d
}

// spec declares In readable and Work writable under m.
func (tr tree) spec(m Mechanism) *Spec {
	return pin(&Spec{Mechanism: m, ToolDir: tr.Tool, Read: []string{tr.In}, Write: []string{tr.Work}})
}

func (tr tree) env() []string {
	return []string{"IN=" + tr.In, "OUT=" + tr.Out, "WORK=" + tr.Work}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantRefusal checks that err is a *RefusalError for field.
func wantRefusal(t *testing.T, err error, field string) *RefusalError {
	t.Helper()
	var r *RefusalError
	if !errors.As(err, &r) {
		t.Fatalf("got %v, want a refusal of %s", err, field)
	}
	if r.Field != field {
		t.Fatalf("refusal names field %q, want %q (%v)", r.Field, field, r)
	}
	return r
}

// processesWithArgs lists the host pids whose command line is exactly args.
func processesWithArgs(args ...string) []string {
	want := strings.Join(args, "\x00") + "\x00"
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == want {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// eventually polls cond for up to two seconds.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// pin gives a bwrap spec the bubblewrap Detect found (what a lock pins).
func pin(s *Spec) *Spec {
	if s != nil && s.Mechanism == Bwrap && s.Bwrap == nil {
		s.Bwrap = Detect().BwrapPin
	}
	return s
}
