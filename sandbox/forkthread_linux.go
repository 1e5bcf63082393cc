package sandbox

import (
	"fmt"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// PrepareForkThread gives the calling OS thread what must be in place
// before it forks the child of spec (a nil spec means None), because a
// child inherits it from the thread that forks it:
//
//   - under None, when toolbox holds CAP_SYS_ADMIN (root): a seccomp
//     filter refusing the TIOCSTI and TIOCLINUX ioctls, so that an
//     unsandboxed tool cannot type into the operator's terminal even by
//     opening it. Without CAP_SYS_ADMIN the kernel already refuses
//     TIOCSTI on any terminal but the caller's controlling one, which the
//     child (a new session with pipes for stdio) does not have, and the
//     filter could not be loaded without no_new_privs, which would take
//     setuid programs away from an unsandboxed tool: nothing is done.
//   - under bwrap with UnixSockets and net: host: a Landlock domain that
//     handles no filesystem right (bwrap still mounts and creates its
//     namespaces) but scopes abstract unix sockets and signals, so the
//     tool cannot reach the host's abstract sockets, which it shares
//     with net: host. Without root, no_new_privs is set first (Landlock
//     needs it then; bwrap sets it for the tool anyway).
//
// Start calls it itself; callers of Cmd call it on the goroutine that
// then calls the Cmd's Start, after runtime.LockOSThread. When confined
// is true the thread was changed for good: the caller must never unlock
// it (the thread then ends with the goroutine instead of running others).
// Errors name what failed; the child must not be started then.
func PrepareForkThread(spec *Spec) (confined bool, err error) {
	s := spec
	if s == nil {
		s = &Spec{}
	}
	switch s.Mechanism {
	case "", None:
		if !helper.HasCapSysAdmin() {
			return false, nil
		}
		prog, err := program(filterRules{}, true)
		if err == nil {
			err = helper.LoadFilter(prog)
		}
		return true, err
	case Bwrap:
		if !bwrapNeedsScope(s) {
			return false, nil
		}
		return true, restrictScopes()
	}
	return false, nil
}

// bwrapNeedsScope: a bwrap tool that may open unix sockets and shares the
// host's network namespace (where abstract socket names live).
func bwrapNeedsScope(s *Spec) bool { return s.UnixSockets && !s.NetNone }

// restrictScopes enforces a Landlock domain with only the abstract unix
// socket and signal scopes on the calling thread.
func restrictScopes() error {
	if !helper.HasCapSysAdmin() {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("setting no_new_privs: %w", err)
		}
	}
	attr := llsys.RulesetAttr{Scoped: llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("creating the landlock scope ruleset: %w", err)
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("enforcing the landlock scopes: %w", err)
	}
	return nil
}
