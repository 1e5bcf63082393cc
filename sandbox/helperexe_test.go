package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// useHelperCopy copies this test binary (its TestMain calls Init) to a
// temporary file with mode and returns its path; the helper is reset to
// the running binary at the end of the test.
func useHelperCopy(t *testing.T, mode os.FileMode) string {
	t.Helper()
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "helper")
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	t.Cleanup(func() {
		helperExe.mu.Lock()
		if helperExe.file != nil {
			helperExe.file.Close()
			helperExe.file = nil
		}
		helperExe.mu.Unlock()
	})
	return p
}

// UseHelper's binary serves every later landlock start, from the
// descriptor opened at the call: a file put at the path afterwards is
// never run.
func TestUseHelperRunsTheCheckedDescriptor(t *testing.T) {
	requireMechanism(t, Landlock)
	p := useHelperCopy(t, 0o755)
	if err := UseHelper(p); err != nil {
		t.Fatal(err)
	}
	// Another program at the path now: a start that executed the path
	// would run it instead of the helper and fail.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 99\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	proc, err := Start(&Spec{Mechanism: Landlock, ToolDir: t.TempDir()}, Command{Path: truePath(t)})
	if err != nil {
		t.Fatalf("start through the kept helper: %v", err)
	}
	if code, err := proc.Wait(); code != 0 || err != nil {
		t.Fatalf("true under landlock through the kept helper: exit %d, %v", code, err)
	}
}

// A helper binary someone else could change is refused: it runs as
// toolbox's user with every tool's spec. Its twin above is accepted.
func TestUseHelperRefusesAnUntrustedFile(t *testing.T) {
	testenv.NeedRoot(t) // chown to another user
	for _, c := range []struct {
		name string
		prep func(t *testing.T, p string)
		want string
	}{
		{"group writable", func(t *testing.T, p string) { _ = os.Chmod(p, 0o775) }, "writable by others than its owner"},
		{"world writable", func(t *testing.T, p string) { _ = os.Chmod(p, 0o757) }, "writable by others than its owner"},
		{"not executable", func(t *testing.T, p string) { _ = os.Chmod(p, 0o644) }, "not executable"},
		{"another owner", func(t *testing.T, p string) {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"},
		{"a directory", func(t *testing.T, p string) { _ = os.Remove(p); _ = os.Mkdir(p, 0o755) }, "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := useHelperCopy(t, 0o755)
			c.prep(t, p)
			err := UseHelper(p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("UseHelper: %v, want %q", err, c.want)
			}
			if helperExe.file != nil {
				t.Fatal("a refused helper was kept")
			}
		})
	}
}

// The helper and the limits wrapper refuse a spec with a field they do
// not know: a helper older than its caller would otherwise drop a
// restriction (or a limit) it never heard of. The helper's binary form
// opens with its Spec's layout (another build's is refused, see
// helper's TestSpecBinaryRefusesDamage); the wrapper's JSON refuses
// unknown fields.
func TestHelperRefusesUnknownSpecFields(t *testing.T) {
	hs := helperSpec{Path: "/bin/true", Argv: []string{"true"}, Dir: "/", Grants: []helper.Grant{{Path: "/usr", Dir: true}}}
	data, err := hs.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got helperSpec
	if err := got.UnmarshalBinary(data); err != nil || got.Path != "/bin/true" || len(got.Grants) != 1 {
		t.Fatalf("a spec of known fields: %+v, %v", got, err)
	}
	future := strings.Replace(helper.SpecLayout, "Dir bool,", "Dir bool,Deny bool,", 1)
	if err := got.UnmarshalBinary(append(binaryString(future), data[len(binaryString(helper.SpecLayout)):]...)); err == nil || !strings.Contains(err.Error(), "same build") {
		t.Errorf("a spec of a build whose grants have a Deny field: %v, want it refused", err)
	}
	var ls limitsSpec
	if err := helper.DecodeSpec([]byte(`{"path":"/bin/true","argv":["true"],"env":[],"rlimits":[{"r":1,"c":1,"m":1}]}`), &ls); err != nil || len(ls.Rlimits) != 1 {
		t.Fatalf("a limits spec of known fields: %+v, %v", ls, err)
	}
	if err := helper.DecodeSpec([]byte(`{"path":"/bin/true","argv":["true"],"env":[],"a_future_limit":1}`), &limitsSpec{}); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("a limits spec with a future field: %v, want an unknown field refused", err)
	}
}

// binaryString is s as the helper's binary form writes a string.
func binaryString(s string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(s))), s...)
}

// The limits wrapper itself decodes strictly: started with a spec that
// asks for a limit it does not know, it refuses to run the tool (the twin:
// the same spec without it runs the tool).
func TestLimitsWrapperRefusesUnknownSpecFields(t *testing.T) {
	run := func(spec string) (int, string) {
		t.Helper()
		specR, err := helper.FeedPipe([]byte(spec))
		must(t, err)
		defer specR.Close()
		var out bytes.Buffer
		cmd := exec.Command("/proc/self/exe", limitsArg)
		cmd.ExtraFiles = []*os.File{specR}
		cmd.Stdout, cmd.Stderr, cmd.Env = &out, &out, []string{}
		err = cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
	if code, out := run(`{"path":"/bin/echo","argv":["echo","ran"],"env":[]}`); code != 0 || out != "ran\n" {
		t.Fatalf("a known spec: exit %d, %q", code, out)
	}
	code, out := run(`{"path":"/bin/echo","argv":["echo","ran"],"env":[],"a_future_limit":1}`)
	if code != exitSetupFailed || !strings.Contains(out, "unknown field") {
		t.Fatalf("a spec with an unknown limit: exit %d, %q; want %d and the field refused", code, out, exitSetupFailed)
	}
}
