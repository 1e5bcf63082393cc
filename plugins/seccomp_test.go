package plugins_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// A plugin may create its unix socket (sandbox.Spec.UnixSockets) under
// bwrap with net: host too, where toolbox confines the thread that forks
// bwrap with Landlock's abstract-socket scope: the handshake and calls
// still work.
func TestPluginUnderBwrapNetHost(t *testing.T) {
	s := sandbox.Detect()
	testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason)
	bin := exampleBinary(t, "read_file")
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "f.txt"), []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := &sandbox.Spec{Mechanism: sandbox.Bwrap, ToolDir: filepath.Dir(bin), Read: []string{data}, Bwrap: s.BwrapPin}
	c, err := plugins.Options{Dir: data}.Start(ctxT(t), bin, spec, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer closeAndCheck(t, c)
	var out collect
	res, err := c.Run(ctxT(t), map[string]any{"path": "f.txt", "start": 2}, out.add)
	if err != nil || res.ExitCode != 0 || string(out.chunks) != "2\n" {
		t.Errorf("Run: %+v, %v, %q", res, err, out.chunks)
	}
}
