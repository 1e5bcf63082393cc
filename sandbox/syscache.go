package sandbox

import (
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

// systemEntries is scanSystemEntries, scanned once and scanned again only
// when "/" or "/etc" changed: every entry is a child of one of them (or of
// what /etc links to), so adding, removing or replacing one (a symlink
// re-pointed is a replaced link) changes its directory's modification
// time. A server starting tools at a high rate then pays two stats a
// start instead of a scan of about thirty paths (issue 13).
//
// What the cache can miss is a change below an entry (a directory under
// /usr replaced by a link): the binds are then of the paths resolved
// before, read-only system paths all the same, and the start fails if one
// is gone. Nothing the tool may write or reach beyond them comes from
// here: declared paths are resolved and opened at every start (grants).
func systemEntries(netHost bool) []sysEntry {
	key := sysStamp{}
	if !key.read() {
		return scanSystemEntries(netHost)
	}
	sysCache.mu.Lock()
	defer sysCache.mu.Unlock()
	c := &sysCache.byNet[0]
	if netHost {
		c = &sysCache.byNet[1]
	}
	if c.entries == nil || c.stamp != key {
		c.entries, c.stamp = scanSystemEntries(netHost), key
	}
	return slices.Clone(c.entries)
}

// sysCache holds the last scan for each network setting.
var sysCache struct {
	mu    sync.Mutex
	byNet [2]struct {
		stamp   sysStamp
		entries []sysEntry
	}
}

// sysStamp identifies the state of "/" and "/etc" (followed, as the scan
// follows a linked /etc).
type sysStamp struct {
	root, etc dirStamp
}

type dirStamp struct {
	dev, ino uint64
	mtime    time.Time
}

func (k *sysStamp) read() bool {
	return k.root.read("/") && k.etc.read("/etc")
}

func (d *dirStamp) read(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	d.dev, d.ino, d.mtime = uint64(st.Dev), st.Ino, fi.ModTime()
	return true
}
