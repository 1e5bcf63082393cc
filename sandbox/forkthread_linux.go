package sandbox

import (
	"fmt"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
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
		if !hasCapSysAdmin() {
			return false, nil
		}
		prog, err := program(filterRules{}, true)
		if err == nil {
			err = loadFilter(prog)
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
	if !hasCapSysAdmin() {
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

// hasCapSysAdmin reports whether the calling thread has CAP_SYS_ADMIN in
// its effective set.
func hasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	const c = unix.CAP_SYS_ADMIN
	return data[c/32].Effective&(1<<(c%32)) != 0
}
