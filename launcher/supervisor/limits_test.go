package supervisor

import (
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
)

// Background commands (builtin "process") run under the builtin's locked
// limits: a command writing past file_size stops at the limit. Twin: the
// same command within the limit, and without limits, runs to its end.
func TestRunCommandAppliesBuiltinLimits(t *testing.T) {
	f := newFixture(t)
	f.Lock.BuiltinLimits = map[string]*manifest.Limits{CommandTool: {FileSizeBytes: 1 << 20, OpenFiles: 128}}
	s := f.supervisor(t)
	dir := t.TempDir()
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: `ulimit -n; trap '' XFSZ; head -c 3145728 /dev/zero > big; wc -c < big`, Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Done || !strings.HasPrefix(tailText(st), "128\n") || !strings.Contains(tailText(st), "File too large") || !strings.Contains(tailText(st), "1048576\n") {
		t.Fatalf("command under file_size 1MiB: %+v, tail %q", st.Handle, tailText(st))
	}
	// Positive twin: within the limit.
	st, err = s.RunCommand(ctxT(t), "sess", Command{Cmd: `head -c 4096 /dev/zero > small && wc -c < small`, Cwd: dir})
	if err != nil || st.Status != StateExited || !strings.Contains(tailText(st), "4096") {
		t.Fatalf("a small write: %+v, %v", st, err)
	}
}
