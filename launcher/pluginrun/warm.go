package pluginrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/warm"
	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Process is a warm plugin: a started go-plugin client and the identity of
// the binary it was verified from.
type Process struct {
	*plugins.Client

	mu    sync.Mutex
	stamp fileStamp // of the binary, taken before it was hashed
}

var _ warm.Instance = (*Process)(nil)

// Pool is where the servers keep warm plugins: one owner per session.
type Pool = warm.Pool[*Process]

// Owner is one session's warm plugins.
type Owner = warm.Owner[*Process]

// NewPool returns an empty pool of warm plugins.
func NewPool(opts warm.Options) *Pool { return warm.New[*Process](opts) }

// Warm is the launcher.PluginRunner of the servers (DESIGN.md §5 "Warm
// processes"): the first call of a tool in a session starts the plugin
// (its binary hashed against the lock just before, launcher.VerifyBinary
// through PluginCall.Verify), and every later call of that session is an
// RPC to the same process, up to PluginCall.Concurrency at once. A process
// whose call timed out, was cancelled or failed as a call is retired (it
// may still be busy; a new one serves the next call), one that dies is
// restarted with back-off by the pool, and all of them stop when the
// session's Owner is closed.
//
// Each call still stats the binary: when it changed since its process was
// verified (size, times, inode), it is hashed again, and a binary that no
// longer matches the lock is refused (its process retired) as `toolbox run`
// refuses it. The process's environment is the one of the
// call that started it (the per-call AGENT_TURN_ID included); any other
// change of the environment, sandbox, binary or lock starts a new process.
//
// The plugin's stderr is kept per process (its last 4 KiB are quoted when
// it dies), not per call: a failing call's stderr is the tool's own error
// message.
type Warm struct {
	// Owner is the session's warm plugins (Pool.NewOwner); required.
	Owner *Owner
	// Options tune how plugins are started (Dir defaults to the call's).
	Options plugins.Options
}

var _ launcher.StartVerifier = (*Warm)(nil)

// VerifiesAtStart is true: Warm hashes the binary before it starts each
// process (launcher.StartVerifier).
func (w *Warm) VerifiesAtStart() bool { return true }

// RunPlugin runs call on the session's process of call.Tool, starting it
// when there is none. started is false when no process could be started
// for the call: err then says why (a *launcher.RefusedError when the binary
// no longer matches the lock). When ctx ends, RunPlugin returns at once
// with ctx's error and the process is retired.
func (w *Warm) RunPlugin(ctx context.Context, call launcher.PluginCall) (int, bool, error) {
	if w.Owner == nil {
		return 0, false, errors.New("running plugin: no warm pool owner")
	}
	if call.Verify == nil {
		return 0, false, fmt.Errorf("running plugin %s: the call has no Verify", call.Path)
	}
	spec := warm.Spec[*Process]{
		Config: config(call),
		Limit:  call.Concurrency,
		Start:  func(sctx context.Context) (*Process, error) { return w.start(sctx, call) },
	}
	lease, err := w.Owner.Acquire(ctx, call.Tool, spec)
	if err != nil {
		if ctx.Err() != nil {
			return 0, true, ctx.Err() // the call's time ran out waiting
		}
		return 0, false, err
	}
	p := lease.Instance()
	if err := p.reverify(call); err != nil {
		lease.Retire()
		return 0, false, err
	}
	code, broken, err := runCall(ctx, p.Client, call)
	if broken && !errors.Is(err, plugins.ErrPluginExited) {
		lease.Retire()
	} else {
		lease.Release() // a process that died is the pool's: it restarts it after the back-off
	}
	return code, true, err
}

// start verifies the binary and starts a process for call.
func (w *Warm) start(ctx context.Context, call launcher.PluginCall) (*Process, error) {
	st, err := stampOf(call.Path)
	if err != nil {
		if verr := call.Verify(); verr != nil {
			err = verr // it says the binary is gone, with the fix
		}
		return nil, warm.Unstarted(err)
	}
	opts := w.Options
	if call.Open != nil {
		// What was hashed is what starts (DESIGN.md §6).
		exe, err := call.Open()
		if err != nil {
			return nil, warm.Unstarted(err)
		}
		defer exe.Close()
		opts.Exe = exe
	} else if err := call.Verify(); err != nil {
		return nil, warm.Unstarted(err)
	}
	if opts.Dir == "" {
		opts.Dir = call.Dir
	}
	c, err := opts.Start(ctx, call.Path, call.Spec, call.Env)
	if err != nil {
		return nil, err
	}
	return &Process{Client: c, stamp: st}, nil
}

// config identifies what a process is started with: the same config means
// the same process may serve the call. AGENT_TURN_ID, fresh for each call,
// is left out (a warm process keeps the one it started with).
func config(call launcher.PluginCall) string {
	env := slices.DeleteFunc(slices.Clone(call.Env), func(kv string) bool { return strings.HasPrefix(kv, "AGENT_TURN_ID=") })
	var spec sandbox.Spec
	if call.Spec != nil {
		spec = *call.Spec
	}
	b, _ := json.Marshal(struct {
		Path, SHA256, Dir string
		Spec              sandbox.Spec
		Env               []string
		Limit             int
	}{call.Path, call.SHA256, call.Dir, spec, env, call.Concurrency})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fileStamp tells two versions of a file apart without reading it: a
// write changes its ctime (which no caller can set back), a replacement
// its inode.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

func stampOf(path string) (fileStamp, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileStamp{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileStamp{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, nil
}

// reverify checks, by one stat, that the binary is still the file the
// process was verified from; when it is not (rewritten, replaced, touched),
// it hashes it against the lock again (call.Verify): a binary that no
// longer matches is refused, one with the locked content (touched, or
// rewritten identically) keeps being served by the process.
func (p *Process) reverify(call launcher.PluginCall) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, serr := stampOf(call.Path)
	if serr == nil && st == p.stamp {
		return nil
	}
	if err := call.Verify(); err != nil {
		return err
	}
	if serr != nil {
		return serr // gone, yet verified: cannot happen; refuse anyway
	}
	p.stamp = st
	return nil
}
