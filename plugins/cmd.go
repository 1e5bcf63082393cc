package plugins

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// pluginCmd builds the unstarted, confined command for the plugin at path
// (sandbox.Cmd), the function releasing the parent's copies of the
// descriptors it passes to the child, and the function to call on the
// locked thread that starts it (sandbox.PrepareForkThread). The socket
// directory go-plugin made for this plugin must be writable by it: it is
// added to the sandbox's writable paths, and handed to the run_as
// identity when there is one; the plugin may create unix sockets
// (UnixSockets), which the sandbox otherwise refuses.
func pluginCmd(path string, exe *sandbox.Executable, spec *sandbox.Spec, socketDir, dir string, env []string) (cmd *exec.Cmd, release func(), prepThread func() (bool, error), err error) {
	var s sandbox.Spec
	if spec != nil {
		s = *spec.ForPlugin(socketDir)
	}
	if s.RunAs != nil {
		if err := os.Chown(socketDir, int(s.RunAs.UID), int(s.RunAs.GID)); err != nil {
			return nil, nil, nil, fmt.Errorf("handing the plugin socket directory to uid %d: %w", s.RunAs.UID, err)
		}
	}
	cmd, release, err = sandbox.Cmd(&s, sandbox.Command{Path: path, Exe: exe, Env: env, Dir: dir})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("preparing plugin %q: %w", path, err)
	}
	return cmd, release, func() (bool, error) { return sandbox.PrepareForkThread(&s) }, nil
}
