package runspec

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/manifest"
)

// Writer is a tool of a lock whose writable grant covers a path: that
// tool could have written a file there (PlantableBy).
type Writer struct {
	// Tool is the tool's name; Grant the writable path (resolved, absolute)
	// that covers the file.
	Tool, Grant string
}

// PlantableBy lists, sorted by tool, the sandboxed tools of lock l (at
// lockPath, absolute) whose declared writable paths cover p (absolute,
// links resolved): a file at p could have been written by one of them.
// Paths naming the workspace are resolved against the lock's default
// workspace, and skipped without one. Unconfined tools are not listed:
// they can write anything the user can (the exposure report says so).
// This is what `toolbox run` and `toolbox lock` check a toolbox file
// found by default against (DESIGN.md §6: a tool planting a toolbox file
// in the workspace it may write).
func PlantableBy(lockPath string, l *manifest.Lock, p string) []Writer {
	if l == nil {
		return nil
	}
	dir := filepath.Dir(lockPath)
	ws := ""
	if l.Workspace != "" {
		ws = evalOr(resolve(dir, l.Workspace))
	}
	var out []Writer
	for name, t := range l.Tools {
		if t == nil || t.Runtime.Mechanism == "none" || !declaresSandbox(t) || t.Describe.Runtime.Sandbox.FS == nil {
			continue
		}
		for _, w := range t.Describe.Runtime.Sandbox.FS.Write {
			g, ok := t.Runtime.Paths[w]
			if ok {
				g = evalOr(resolve(dir, g))
			} else if r, _, err := ResolvePath(dir, w, ws, nil); err == nil {
				g = evalOr(r)
			} else {
				continue
			}
			if within(p, g) {
				out = append(out, Writer{Tool: name, Grant: g})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Writer) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// evalOr is p with its links resolved, or p when that fails.
func evalOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
