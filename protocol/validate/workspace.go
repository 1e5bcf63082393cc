package validate

import (
	"strconv"
	"strings"

	"github.com/toolbox-dev/toolbox/protocol"
)

// workspacePaths checks the uses of protocol.WorkspaceToken in the
// declared paths (runtime.sandbox.fs.read and .write, runtime.rundir):
// only as a path's first element, and never climbing above the workspace
// (DESIGN.md §2). Values of the wrong type were reported by the schema.
func (s *semantics) workspacePaths(rt map[string]any) {
	check := func(at []string, v any) {
		p, ok := v.(string)
		if !ok {
			return
		}
		if _, _, err := protocol.WorkspacePath(p); err != nil {
			s.add(at, "%s", strings.TrimPrefix(err.Error(), protocol.ErrWorkspacePath.Error()+": "))
		}
	}
	if sb, ok := rt["sandbox"].(map[string]any); ok {
		if fs, ok := sb["fs"].(map[string]any); ok {
			for _, key := range []string{"read", "write"} {
				list, _ := fs[key].([]any)
				for i, v := range list {
					check([]string{"runtime", "sandbox", "fs", key, strconv.Itoa(i)}, v)
				}
			}
		}
	}
	if v, ok := rt["rundir"]; ok {
		check([]string{"runtime", "rundir"}, v)
	}
}
