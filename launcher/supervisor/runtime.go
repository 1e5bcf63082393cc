package supervisor

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Runtime is the runtime a process was started with, resolved: what the
// v2 spec's handle shows ("the runtime it was started with, resolved
// (which user, which envdir)"), so a model or an operator reading a
// handle knows who runs it, where, and how confined.
type Runtime struct {
	// Mechanism is the sandbox mechanism: "none", "bwrap" or "landlock".
	Mechanism string `json:"mechanism"`
	// User, UID and GID are who it runs as: its run_as, else the
	// supervisor's own user (User is the numeric id when the name is
	// unknown).
	User string `json:"user"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	// Envdir is the directory its environment was read from (absolute); ""
	// for none.
	Envdir string `json:"envdir,omitempty"`
	// Rundir is its working directory, as the host names it (absolute).
	Rundir string `json:"rundir"`
}

// identity is a user the supervisor reports.
type identity struct {
	name     string
	uid, gid uint32
}

// selfIdentity is the supervisor's own user.
func selfIdentity() identity {
	id := identity{uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}
	id.name = strconv.FormatUint(uint64(id.uid), 10)
	if u, err := user.LookupId(id.name); err == nil {
		id.name = u.Username
	}
	return id
}

// toolRuntime resolves the runtime of a locked tool prepared as spec and
// cmd (runspec.Prepare): lockDir is the lock's directory, self the
// supervisor's user, cwd the supervisor's working directory.
func toolRuntime(lockDir string, t *manifest.Tool, spec *sandbox.Spec, cmd sandbox.Command, self identity, cwd string) *Runtime {
	rt := &Runtime{Mechanism: string(sandbox.None), User: self.name, UID: self.uid, GID: self.gid, Rundir: cmd.Dir}
	if spec != nil && spec.Mechanism != "" {
		rt.Mechanism = string(spec.Mechanism)
	}
	if id := t.Runtime.RunAs; id != nil {
		rt.User, rt.UID, rt.GID = id.User, id.UID, id.GID
	}
	if e := t.Runtime.Envdir; e != "" {
		rt.Envdir = filepath.FromSlash(e)
		if !filepath.IsAbs(rt.Envdir) {
			rt.Envdir = filepath.Join(lockDir, rt.Envdir)
		}
	}
	if rt.Rundir == "" {
		// What the sandbox package does with no working directory: the
		// tool's own directory when confined, else the supervisor's.
		rt.Rundir = cwd
		if rt.Mechanism != string(sandbox.None) && spec.ToolDir != "" {
			rt.Rundir = spec.ToolDir
		}
	}
	return rt
}

// commandRuntime is a background command's runtime: its mechanism (spec;
// nil = unconfined), as the supervisor's user, in dir (its cwd when "").
func commandRuntime(self identity, spec *sandbox.Spec, dir, cwd string) *Runtime {
	if dir == "" {
		dir = cwd
	}
	mech := sandbox.None
	if spec != nil && spec.Mechanism != "" {
		mech = spec.Mechanism
	}
	return &Runtime{Mechanism: string(mech), User: self.name, UID: self.uid, GID: self.gid, Rundir: dir}
}
