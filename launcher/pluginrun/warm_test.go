package pluginrun_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/toolbox-dev/toolbox/manifest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/internal/testplugin"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/pluginrun"
	"github.com/toolbox-dev/toolbox/launcher/warm"
	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init() // the landlock helper re-executes this binary
	testplugin.Main()
	code := testenv.RunWithTmp(m)
	plugin.CleanupClients()
	os.Exit(code)
}

// fixture is a lock holding one plugin tool, "probe": a copy of this test
// binary, run by a warm runner of its own owner.
type fixture struct {
	*locktest.Fixture
	bin   string
	pool  *pluginrun.Pool
	owner *pluginrun.Owner
	warm  *pluginrun.Warm
}

func newFixture(t *testing.T, opts warm.Options, concurrency int) *fixture {
	t.Helper()
	f := &fixture{Fixture: locktest.New(t, "sandbox = \"none\"\n")}
	f.bin = testplugin.Add(t, f.Fixture, "probe", concurrency)
	f.pool = pluginrun.NewPool(opts)
	t.Cleanup(f.pool.Close)
	o, err := f.pool.NewOwner("test")
	if err != nil {
		t.Fatal(err)
	}
	f.owner = o
	f.warm = &pluginrun.Warm{Owner: o}
	return f
}

// call runs the probe tool with action through launcher.Run and the given
// runner, and returns its output.
func (f *fixture) call(t *testing.T, pr launcher.PluginRunner, action string, timeout time.Duration) (*launcher.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return launcher.Run(ctx, launcher.Request{
		LockPath: f.LockPath, Lock: f.Lock, Name: "probe", Args: map[string]any{"action": action},
		CallerEnv: []string{"PATH=/usr/bin:/bin"}, Session: "s-1", Plugins: pr, Timeout: timeout,
	})
}

// pid runs action "pid" and returns the pid of the process that served it.
func (f *fixture) pid(t *testing.T, pr launcher.PluginRunner) int {
	t.Helper()
	res, err := f.call(t, pr, "pid", 0)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("pid call: %v, %+v", err, res)
	}
	n, err := strconv.Atoi(string(res.Output))
	if err != nil {
		t.Fatalf("pid call printed %q", res.Output)
	}
	return n
}

// One process serves every call of its owner; the cold runner starts one
// per call.
func TestWarmServesEveryCallWithOneProcess(t *testing.T) {
	f := newFixture(t, warm.Options{}, 0)
	first := f.pid(t, f.warm)
	for range 3 {
		if got := f.pid(t, f.warm); got != first {
			t.Fatalf("call served by pid %d, want the warm process %d", got, first)
		}
	}
	if !testplugin.Alive(first) {
		t.Fatal("the warm process ended between calls")
	}
	if a, b := f.pid(t, pluginrun.Runner{}), f.pid(t, pluginrun.Runner{}); a == b || a == first {
		t.Fatalf("cold calls served by pids %d and %d (warm %d): want a process each", a, b, first)
	}
}

// A plugin that dies during a call fails that call (never retried), is
// started again after the back-off, and the next call is served by the new
// process. The restart's delay is measured from the crash.
func TestWarmCrashRestartsWithBackoff(t *testing.T) {
	const backoff = 300 * time.Millisecond
	f := newFixture(t, warm.Options{MinBackoff: backoff}, 0)
	old := f.pid(t, f.warm)
	res, err := f.call(t, f.warm, "crash", 0)
	crashed := time.Now()
	if err == nil || !errors.Is(err, plugins.ErrPluginExited) {
		t.Fatalf("crashing call: %v, %+v; want ErrPluginExited", err, res)
	}
	testenv.WaitFor(t, "the restart", func() bool {
		st := f.owner.States()
		return len(st) == 1 && st[0].Running && st[0].Starts == 2
	})
	took := time.Since(crashed)
	if took < backoff {
		t.Fatalf("restarted %s after the crash, before the back-off of %s", took, backoff)
	}
	// The bound: the back-off, plus a plugin start (tens of ms) with room
	// for a loaded machine.
	if took > backoff+5*time.Second {
		t.Fatalf("restarted %s after the crash, want about %s", took, backoff)
	}
	t.Logf("back-off %s: restarted and ready %s after the crash", backoff, took.Round(time.Millisecond))
	if got := f.pid(t, f.warm); got == old {
		t.Fatalf("served by the crashed process %d", old)
	}
	if st := f.owner.States()[0]; st.Crashes != 1 {
		t.Fatalf("state %+v, want one crash", st)
	}
}

// What a plugin wrote before it called os.Exit reaches the call's output,
// every byte, whether the plugin was started for the call or warm.
func TestLastWordsBeforeExitAreKept(t *testing.T) {
	f := newFixture(t, warm.Options{}, 0)
	for name, pr := range map[string]launcher.PluginRunner{"cold": pluginrun.Runner{}, "warm": f.warm} {
		for i := range 5 {
			res, err := f.call(t, pr, "last-words", 0)
			if res == nil {
				t.Fatalf("%s try %d: no result: %v", name, i, err)
			}
			if !bytes.Equal(res.Output, testplugin.LastWords) {
				t.Fatalf("%s try %d: got %d bytes of output (err %v), want the %d written before the exit", name, i, len(res.Output), err, len(testplugin.LastWords))
			}
		}
	}
}

// When the owner (the session) ends, its plugins end, and so do their
// children: nothing is left.
func TestWarmOwnerCloseLeavesNoProcess(t *testing.T) {
	f := newFixture(t, warm.Options{}, 0)
	res, err := f.call(t, f.warm, "spawn", 0)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("spawn: %v, %+v", err, res)
	}
	var pid, child int
	if _, err := fmt.Sscanf(string(res.Output), "%d %d", &pid, &child); err != nil {
		t.Fatalf("spawn printed %q", res.Output)
	}
	if !testplugin.Alive(pid) || !testplugin.Alive(child) {
		t.Fatal("the plugin or its child is not running before the close")
	}
	f.owner.Close()
	if testplugin.Alive(pid) {
		t.Fatalf("plugin %d outlived its owner", pid)
	}
	testenv.WaitFor(t, "the plugin's child to die", func() bool { return !testplugin.Alive(child) })
	if n := f.owner.Live(); n != 0 {
		t.Fatalf("%d processes left", n)
	}
	if _, err := f.call(t, f.warm, "pid", 0); !errors.Is(err, warm.ErrClosed) {
		t.Fatalf("call after the owner ended: %v, want ErrClosed", err)
	}
}

// A binary that does not match the lock is refused when a process would
// start, with the fix, and nothing is started.
func TestWarmRefusesAHashMismatchAtStart(t *testing.T) {
	f := newFixture(t, warm.Options{}, 0)
	f.Lock.Tools["probe"].SHA256 = strings.Repeat("0", 64)
	_, err := f.call(t, f.warm, "pid", 0)
	var re *launcher.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("call: %v, want a *launcher.RefusedError", err)
	}
	for _, want := range []string{`binary "plugins/probe" of tool "probe" changed (sha256 `, "locked 000000000000", "run `toolbox lock`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := f.owner.Live(); n != 0 {
		t.Fatalf("%d processes started for a refused binary", n)
	}
	// Refused at once on every call: a refusal before the start does not
	// back off.
	begun := time.Now()
	if _, err := f.call(t, f.warm, "pid", 0); !errors.As(err, &re) {
		t.Fatalf("second call: %v", err)
	}
	if took := time.Since(begun); took > 2*time.Second {
		t.Fatalf("second refusal took %s", took)
	}
}

// A binary replaced while its process is warm: the next call sees the
// change, retires the process and refuses the new binary as `toolbox run`
// would. Its twin: touching the file without changing it keeps serving.
func TestWarmRefusesABinaryChangedWhileWarm(t *testing.T) {
	f := newFixture(t, warm.Options{}, 0)
	old := f.pid(t, f.warm)
	now := time.Now()
	if err := os.Chtimes(f.bin, now, now); err != nil {
		t.Fatal(err)
	}
	if got := f.pid(t, f.warm); !testplugin.Alive(old) || got == 0 {
		t.Fatalf("touching the binary: served by %d, old %d alive %v", got, old, testplugin.Alive(old))
	}
	// A new build put in place (a running binary cannot be written).
	data, err := os.ReadFile(f.bin)
	if err != nil {
		t.Fatal(err)
	}
	locktest.WriteFile(t, f.bin+".new", string(data)+"\x00", 0o755)
	if err := os.Rename(f.bin+".new", f.bin); err != nil {
		t.Fatal(err)
	}
	_, err = f.call(t, f.warm, "pid", 0)
	var re *launcher.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "changed (sha256") {
		t.Fatalf("call after the binary changed: %v, want the refusal", err)
	}
	testenv.WaitFor(t, "the process of the old binary to end", func() bool { return !testplugin.Alive(old) })
}

// Calls run at once up to the locked concurrency, never more, all on one
// process; beyond it they wait their turn.
func TestWarmConcurrencyBound(t *testing.T) {
	for _, limit := range []int{1, 3} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			f := newFixture(t, warm.Options{}, limit)
			f.pid(t, f.warm) // started
			const calls = 9
			outs := make([]string, calls)
			var wg sync.WaitGroup
			for i := range calls {
				wg.Go(func() {
					res, err := f.call(t, f.warm, "slow", 0)
					if err != nil || res.ExitCode != 0 {
						t.Errorf("slow call: %v, %+v", err, res)
						return
					}
					outs[i] = string(res.Output)
				})
			}
			wg.Wait()
			pids := map[int]bool{}
			most := 0
			for _, o := range outs {
				var pid, seen int
				if _, err := fmt.Sscanf(o, "%d %d", &pid, &seen); err != nil {
					t.Fatalf("slow call printed %q", o)
				}
				pids[pid] = true
				most = max(most, seen)
			}
			if len(pids) != 1 {
				t.Fatalf("served by %d processes, want 1", len(pids))
			}
			if most != limit {
				t.Fatalf("the plugin saw %d calls at once, want the bound %d", most, limit)
			}
		})
	}
}

// A call that times out retires its process (it may still be busy): the
// next call gets a new one, and the old one ends.
func TestWarmTimeoutRetiresTheProcess(t *testing.T) {
	f := newFixture(t, warm.Options{}, 0)
	old := f.pid(t, f.warm)
	res, err := f.call(t, f.warm, "block", 300*time.Millisecond)
	if err != nil || !res.TimedOut || res.ExitCode != launcher.ExitTimeout {
		t.Fatalf("blocked call: %v, %+v; want a timeout", err, res)
	}
	if got := f.pid(t, f.warm); got == old {
		t.Fatal("a call went to the process whose call timed out")
	}
	testenv.WaitFor(t, "the retired process to end", func() bool { return !testplugin.Alive(old) })
	if st := f.owner.States()[0]; st.Crashes != 0 {
		t.Fatalf("retiring counted as a crash: %+v", st)
	}
}

// Warm plugins run in their locked sandbox like cold ones: under bwrap the
// process sees only its grants, and stays warm.
func TestWarmSandboxed(t *testing.T) {
	s := sandbox.Detect()
	testenv.Need(t, s.Bwrap, "bwrap", s.BwrapReason)
	f := newFixture(t, warm.Options{}, 0)
	tl := f.Lock.Tools["probe"]
	tl.Runtime.Mechanism = "bwrap"
	f.Lock.Bwrap = &manifest.Pin{Path: s.BwrapPin.Path, SHA256: s.BwrapPin.SHA256} // what lock pins
	d := *tl.Describe
	rt := *d.Runtime
	rt.Sandbox = &protocol.Sandbox{Net: "none"}
	d.Runtime = &rt
	tl.Describe = &d
	first := f.pid(t, f.warm)
	if got := f.pid(t, f.warm); got != first {
		t.Fatalf("sandboxed plugin: calls served by %d and %d, want one warm process", first, got)
	}
	if n := f.owner.Live(); n != 1 {
		t.Fatalf("%d processes, want 1", n)
	}
}
