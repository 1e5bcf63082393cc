package corecmd

import (
	"bytes"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/compiler"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init() // unconfined tools run under the sandbox helper, which re-executes this binary
	// As Main does: this binary verifies toolbox files by configuration.
	launcher.ConfigDigest = compiler.ConfigDigestFile
	os.Exit(testenv.RunWithTmp(m))
}

// configDigest is the configuration digest of the toolbox file at path.
func configDigest(t *testing.T, path string) string {
	t.Helper()
	d, err := compiler.ConfigDigestFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func testGlobals() *cli.Globals {
	return &cli.Globals{IO: cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}}
}

func TestLockFlags(t *testing.T) {
	var got *LockOptions
	cmd := NewCmdLock(testGlobals(), func(o *LockOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--check", "--probe-timeout", "2s"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.Check || got.ProbeTimeout != 2*time.Second {
		t.Errorf("options: %+v", got)
	}
}

func TestCheckFlags(t *testing.T) {
	var got *CheckOptions
	cmd := NewCmdCheck(testGlobals(), func(o *CheckOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--probe", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.Probe || !got.JSON {
		t.Errorf("options: %+v", got)
	}
}

func TestDescribeFlags(t *testing.T) {
	var got *DescribeOptions
	cmd := NewCmdDescribe(testGlobals(), func(o *DescribeOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"./tool", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Path != "./tool" || !got.JSON {
		t.Errorf("options: %+v", got)
	}
}

// TestCoreCommandsListed: the toolbox binary lists (and hands over) exactly
// the commands toolbox-core has beyond its own.
func TestCoreCommandsListed(t *testing.T) {
	g := testGlobals()
	own := map[string]bool{}
	for _, c := range cli.NewRoot(g).Commands() {
		own[c.Name()] = true
	}
	var core, listed []string
	for _, c := range NewRoot(g.IO).Commands() {
		if !own[c.Name()] {
			core = append(core, c.Name())
		}
	}
	for _, c := range cli.CoreCommands {
		listed = append(listed, strings.Fields(c.Use)[0])
	}
	sort.Strings(core)
	sort.Strings(listed)
	if strings.Join(core, ",") != strings.Join(listed, ",") {
		t.Errorf("toolbox-core has %q beyond toolbox's own; cli.CoreCommands lists %q", core, listed)
	}
}
