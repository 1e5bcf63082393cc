// Package testplugin is a go-plugin tool for the tests of the packages
// that run plugins from a lock (launcher/pluginrun, the servers): the test
// binary itself, started as the plugin when ModeEnv says so. Each call
// does one action and prints what the tests check: its process id, a
// crash, a slow call reporting the most calls it saw at once, a child's
// pid, or a block until cancelled. It is for tests only.
package testplugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/plugins/sdk"
	"github.com/toolbox-dev/toolbox/protocol"
)

// ModeEnv makes the test binary the plugin ("plugin") or a child that
// sleeps ("sleep"). Describe declares it in runtime.environment, so that
// it reaches a sandboxed plugin too.
const ModeEnv = "TOOLBOX_TEST_PLUGIN_MODE"

// Main serves the plugin, or sleeps, and exits when ModeEnv says so; it
// returns otherwise. Call it in TestMain after sandbox.Init.
func Main() {
	switch os.Getenv(ModeEnv) {
	case "plugin":
		sdk.Serve(tool{})
		os.Exit(0)
	case "sleep":
		time.Sleep(time.Hour)
		os.Exit(0)
	}
}

// Describe is the plugin's describe document: one arg, "action" (pid,
// crash, last-words, slow, spawn, block), chunks output, up to 8 calls at once.
func Describe() *protocol.Describe {
	return &protocol.Describe{
		Protocol: 2, Slug: "probe", Description: "a plugin for the tests of warm plugins",
		Args:    []protocol.Arg{{Name: "action", Description: "what to do", Type: "string", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional}},
		Process: &protocol.Process{Output: &protocol.Output{Framing: protocol.FramingChunks}},
		Runtime: &protocol.Runtime{Concurrency: 8, Environment: map[string]string{ModeEnv: "plugin"}},
	}
}

// Add copies the test binary to plugins/NAME in f and locks it as the
// plugin tool NAME (mechanism none, probe ok) with the given locked
// concurrency. It returns the copy's path.
func Add(t testing.TB, f *locktest.Fixture, name string, concurrency int) string {
	t.Helper()
	bin := filepath.Join(f.Dir, "plugins", name)
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	locktest.WriteFile(t, bin, string(data), 0o755)
	f.Lock.Tools[name] = &manifest.Tool{
		Kind: manifest.KindPlugin, Path: "plugins/" + name, SHA256: locktest.SHA256File(t, bin),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Protocol: 2, Describe: Describe(),
		Runtime: manifest.Runtime{Mechanism: "none", Concurrency: concurrency},
		Probe:   manifest.Probe{Status: manifest.StatusOK},
	}
	return bin
}

// LastWords is what action "last-words" writes before it exits 5.
var LastWords = bytes.Repeat([]byte("last words\n"), 10000)

type tool struct{}

var inflight, peak atomic.Int32

func (tool) Describe() protocol.Describe { return *Describe() }

func (tool) Check(context.Context) protocol.CheckResult { return protocol.CheckResult{OK: true} }

func (tool) Run(ctx context.Context, args sdk.Args, out sdk.Emitter) (int, error) {
	pid := os.Getpid()
	switch args.String("action") {
	case "pid":
		_, err := fmt.Fprint(out, pid)
		return 0, err
	case "crash":
		os.Exit(3)
	case "last-words":
		// Output, then os.Exit at once: what it wrote must reach the host.
		_, _ = out.Write(LastWords)
		os.Exit(5)
	case "slow":
		n := inflight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(150 * time.Millisecond)
		inflight.Add(-1)
		_, err := fmt.Fprintf(out, "%d %d", pid, peak.Load())
		return 0, err
	case "spawn":
		exe, err := os.Executable()
		if err != nil {
			return 1, err
		}
		cmd := exec.Command(exe)
		cmd.Env = []string{ModeEnv + "=sleep"}
		if err := cmd.Start(); err != nil {
			return 1, err
		}
		_, err = fmt.Fprintf(out, "%d %d", pid, cmd.Process.Pid)
		return 0, err
	case "block":
		<-ctx.Done()
		return 1, ctx.Err()
	}
	return 2, fmt.Errorf("unknown action %q", args.String("action"))
}

// Alive reports whether pid is a process that has not exited (a zombie
// has).
func Alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || (data[i+2] != 'Z' && data[i+2] != 'X')
}
