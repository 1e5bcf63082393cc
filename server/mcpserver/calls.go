package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/pluginrun"
	"github.com/toolbox-dev/toolbox/launcher/warm"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// DefaultMaxCalls is the bound on tool calls that run at once when
// Options.MaxCalls is 0: four per core. More calls than that wait their
// turn (with progress notifications) instead of all starting at once and
// thrashing the machine (issue 13).
var DefaultMaxCalls = 4 * runtime.NumCPU()

// callSlots bounds the tool calls that run at once: a oneshot or stream
// call holds a slot from before its tool starts until it ends; a service
// holds one while it starts. Calls that manage processes (sends,
// processes, inbox, background commands) take none.
type callSlots chan struct{}

// acquire waits for a free slot, bounded by ctx, and returns its release.
func (c callSlots) acquire(ctx context.Context) (func(), error) {
	select {
	case c <- struct{}{}:
		return func() { <-c }, nil
	default:
	}
	select {
	case c <- struct{}{}:
		return func() { <-c }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for one of the %d call slots: %w", cap(c), ctx.Err())
	}
}

// newPluginPool is the pool of warm plugins (DESIGN.md §5): one process
// per MCP connection and plugin tool, restarted with back-off, stopped
// with its connection.
func newPluginPool(logf func(string, ...any)) *pluginrun.Pool {
	return pluginrun.NewPool(warm.Options{Logf: logf})
}

// pluginRunner is the runner of a connection's plugin calls: warm in the
// connection's own pool owner, unless Options.Plugins replaces it.
func (s *Server) pluginRunner(id string) (launcher.PluginRunner, *pluginrun.Owner, error) {
	if s.opts.Plugins != nil {
		return s.opts.Plugins, nil, nil
	}
	o, err := s.pool.NewOwner(id)
	if err != nil {
		return nil, nil, err
	}
	return &pluginrun.Warm{Owner: o}, o, nil
}

// lockFile watches the lock's file: a call re-reads it when `toolbox lock`
// replaced it (one stat per call), so that a relocked binary or toolbox
// file is served without a restart.
type lockFile struct {
	mu    sync.Mutex
	stamp lockStamp
	// warned is the stamp of a new lock already refused (said once).
	warned lockStamp
}

// lockStamp tells two versions of the lock apart without reading it:
// `toolbox lock` writes a new file and renames it into place.
type lockStamp struct {
	mtime time.Time
	size  int64
}

func stampLock(path string) (lockStamp, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return lockStamp{}, false
	}
	return lockStamp{mtime: fi.ModTime(), size: fi.Size()}, true
}

// refreshLock re-reads the lock when its file changed since it was read.
// The new lock is served when it holds the same MCP tools (names,
// descriptions, schemas) and matches the toolbox file; otherwise the one
// read before stays, and the server says once on its log that a restart is
// needed (the tool list it gave its clients cannot change under them).
func (s *Server) refreshLock() {
	f := &s.lockFile
	st, ok := stampLock(s.lockPath)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !ok || st == f.stamp || st == f.warned {
		return
	}
	l, err := manifest.Read(s.lockPath)
	if err == nil {
		err = launcher.VerifyToolboxFile(s.lockPath, l)
	}
	if err == nil && !sameDefinitions(s.currentLock(), l, filepath.Dir(s.lockPath)) {
		err = fmt.Errorf("its MCP tools differ from the ones served")
	}
	if err != nil {
		f.warned = st
		s.log.Warn("the lock changed; restart the MCP server to serve it", "lock", s.lockPath, "reason", err)
		return
	}
	f.stamp = st
	s.SetLock(l)
	s.log.Info("re-read the lock", "lock", s.lockPath)
}

// sameDefinitions reports whether two locks give MCP clients the same
// tools.
func sameDefinitions(a, b *manifest.Lock, lockDir string) bool {
	da, db := mcpnames.Definitions(a, lockDir), mcpnames.Definitions(b, lockDir)
	return slices.EqualFunc(da, db, func(x, y mcpnames.Definition) bool {
		return x.Name == y.Name && x.Description == y.Description &&
			jsonOf(x.InputSchema) == jsonOf(y.InputSchema) && jsonOf(x.OutputSchema) == jsonOf(y.OutputSchema)
	})
}

// jsonOf is v's JSON (maps with sorted keys), for comparing schemas.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
