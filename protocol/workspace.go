package protocol

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// WorkspaceToken names the workspace in a declared path (DESIGN.md §2, a
// v2 extension): the directory of the project a call works on, chosen at
// run time (--workspace, $TOOLBOX_WORKSPACE, the toolbox file's default,
// else the current directory) and never pinned by the lock. It may start
// runtime.sandbox.fs.read and .write entries and runtime.rundir, alone
// ("{workspace}") or followed by a relative path ("{workspace}/src"), and
// the fs paths of the toolbox file's builtin "process" block.
//
// The token is reserved: a path holding it anywhere but as its whole first
// element is refused, so that no real file name can be read as it (a
// directory literally named "{workspace}" cannot be declared). Braces,
// rather than "$WORKSPACE", because a shell heredoc expands $NAME: a
// describe document printed by `cat <<EOF` would silently turn
// "$WORKSPACE/sub" into "/sub".
const WorkspaceToken = "{workspace}"

// ErrWorkspacePath is wrapped by WorkspacePath's errors.
var ErrWorkspacePath = errors.New("invalid use of " + WorkspaceToken)

// WorkspacePath reports whether the declared path p names the workspace
// and, when it does, the part below it: "" for the workspace itself, else
// a clean relative slash path ("src/gen"). Empty and "." elements are
// dropped. It fails (ErrWorkspacePath) when p holds the token anywhere
// but as its whole first element ("a/{workspace}", "{workspace}x"), or
// when the part below the token has a ".." element: nothing above the
// workspace is reachable through it.
func WorkspacePath(p string) (rel string, ok bool, err error) {
	if !strings.Contains(p, WorkspaceToken) {
		return "", false, nil
	}
	rest, found := strings.CutPrefix(p, WorkspaceToken)
	if !found || (rest != "" && rest[0] != '/') {
		return "", false, fmt.Errorf("%w: path %q holds %s other than as its first element; write %s or %s/RELATIVE/PATH", ErrWorkspacePath, p, WorkspaceToken, WorkspaceToken, WorkspaceToken)
	}
	var parts []string
	for _, e := range strings.Split(rest, "/") {
		switch e {
		case "", ".":
		case "..":
			return "", false, fmt.Errorf("%w: path %q has a \"..\" element; nothing above the workspace is reachable through %s", ErrWorkspacePath, p, WorkspaceToken)
		default:
			if strings.Contains(e, WorkspaceToken) {
				return "", false, fmt.Errorf("%w: path %q holds %s twice", ErrWorkspacePath, p, WorkspaceToken)
			}
			parts = append(parts, e)
		}
	}
	return path.Join(parts...), true, nil
}
