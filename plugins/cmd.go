package plugins

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"toolbox/sandbox"
)

// pluginCmd builds the unstarted command for the plugin at path under spec.
// The socket directory go-plugin made for this plugin must be writable by
// it: it is added to the sandbox's writable paths, and handed to the run_as
// identity when there is one.
func pluginCmd(path string, spec *sandbox.Spec, socketDir, dir string, env []string) (*exec.Cmd, func(), error) {
	var s sandbox.Spec
	if spec != nil {
		s = *spec
	}
	if s.Mechanism != "" && s.Mechanism != sandbox.None {
		s.Write = append(slices.Clone(s.Write), socketDir)
	}
	if s.RunAs != nil {
		if err := os.Chown(socketDir, int(s.RunAs.UID), int(s.RunAs.GID)); err != nil {
			return nil, nil, fmt.Errorf("handing the plugin socket directory to uid %d: %w", s.RunAs.UID, err)
		}
	}
	return confinedCmd(&s, sandbox.Command{Path: path, Env: env, Dir: dir})
}

// confinedCmd returns the unstarted command that runs c under spec, and a
// function releasing what it allocated, to call once the command has ended.
//
// TODO(plugins): this is the stand-in for sandbox.Cmd(spec, c), which is
// being added to the sandbox package; replace the body with
// `return sandbox.Cmd(spec, c)` once it lands. Until then only an
// unconfined spec (Mechanism "" or None) is supported, with the same
// hygiene sandbox.Start gives every child: no stdin, the given environment
// only, its own session (set by the runner), run_as applied.
func confinedCmd(spec *sandbox.Spec, c sandbox.Command) (*exec.Cmd, func(), error) {
	if spec.Mechanism != "" && spec.Mechanism != sandbox.None {
		return nil, nil, fmt.Errorf("running a plugin under sandbox mechanism %q: not supported until sandbox.Cmd lands", spec.Mechanism)
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if id := spec.RunAs; id != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: id.Groups}
	}
	cmd.WaitDelay = 500 * time.Millisecond
	return cmd, func() {}, nil
}
