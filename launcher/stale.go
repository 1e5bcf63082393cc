package launcher

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
)

// QuickHashBytes is the size up to which CheckStale always hashes a locked
// file (a script, a small binary): reading it costs microseconds. A larger
// one (a Go plugin of 20 MiB, an interpreter) is hashed only when its
// status or content changed after the lock file was written.
const QuickHashBytes = 1 << 20

// CheckStale is the cheap part of what Run verifies before it launches a
// tool, done for every tool of the lock l at lockPath, for commands that
// only read the lock (`toolbox list`) and must stay fast: the toolbox file
// is the locked one (tf, hashed once, or a check of its own when tf is
// not for l; its configuration digest needs ConfigDigest when the bytes
// changed, see ErrNeedsConfigParser), each tool was locked on this
// platform, and each locked file (a tool's binary, hashed once however
// many commands it serves; an MCP server's executable and entry script)
// still has its sha256, with one exception: a file larger than
// QuickHashBytes whose change time and modification time are both earlier
// than the lock file's modification time is not read, since nothing wrote
// it after the lock was (hashing the default toolbox's two plugins
// took 50-90 ms, ten times the rest of a list). A lock whose time was set
// forward (copied with its times, checked out after the binaries) can hide
// such a change from CheckStale, never from a run or `toolbox check`.
//
// Tools whose probe failed are skipped, as CheckLock skips them. Each
// distinct problem is returned once, in tool name order after the toolbox
// file's, as the error Run would return (a *RefusedError whose fix is
// `toolbox lock`, or a *sandbox.RefusalError for a binary others could
// rewrite); nil when nothing is found.
func CheckStale(lockPath string, l *manifest.Lock, tf *ToolboxFileCheck) []error {
	if l == nil {
		return nil
	}
	if abs, err := filepath.Abs(lockPath); err == nil {
		lockPath = abs // binaries are opened by absolute path
	}
	if !tf.isFor(lockPath, l) {
		tf = newToolboxFileCheck(lockPath, l)
	}
	var since time.Time // zero: every file counts as changed
	if st, err := os.Stat(lockPath); err == nil {
		since = st.ModTime()
	}
	var problems []error
	seen := map[string]bool{}
	add := func(err error) {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			problems = append(problems, err)
		}
	}
	add(tf.Verify())
	checked := map[string]bool{} // by locked file (a binary of many commands once)
	for _, name := range slices.Sorted(maps.Keys(l.Tools)) {
		t := l.Tools[name]
		if t == nil || !usable(t) {
			continue
		}
		if err := verifyLock(lockPath, l, name, tf); err != nil {
			add(err)
			continue
		}
		files := lockedFiles(lockPath, l, t)
		key := strings.Join(files, "\x00") // not filepath.Join: "/a" + "/b/c" would be "/a/b/c"
		if len(files) == 0 || checked[key] {
			continue
		}
		checked[key] = true
		if slices.ContainsFunc(files, func(f string) bool { return mayHaveChanged(f, since) }) {
			add(VerifyBinary(lockPath, l, name))
		}
	}
	return problems
}

// lockedFiles are the host paths VerifyBinary hashes for t: its binary, or
// its MCP server's executable and entry script (none for a server reached
// by URL, or one missing from the lock: VerifyBinary's to report).
func lockedFiles(lockPath string, l *manifest.Lock, t *manifest.Tool) []string {
	abs := func(p string) string { return lockedPath(lockPath, p) }
	if t.Kind != manifest.KindMCP {
		return []string{abs(t.Path)}
	}
	if t.MCP == nil {
		return nil
	}
	s := l.MCPServers[t.MCP.Server]
	if s == nil || len(s.Command) == 0 {
		return nil
	}
	files := []string{abs(s.Command[0])}
	if s.Entry != nil {
		files = append(files, abs(s.Entry.Path))
	}
	return files
}

// mayHaveChanged says whether CheckStale hashes the file at path: always
// when it is small or cannot be examined (the hash then says what is
// wrong), else when it may have changed after since (changedAfter).
func mayHaveChanged(path string, since time.Time) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() <= QuickHashBytes {
		return true
	}
	return changedAfter(st, since)
}

// lockedPath is the host path of p, a path in the lock at lockPath
// (slash-separated): as it is when absolute, else relative to the lock's
// directory.
func lockedPath(lockPath, p string) string {
	p = filepath.FromSlash(p)
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(lockPath), p)
	}
	return p
}
