// Package sandbox starts tool processes: every child with the same hygiene
// (its own session and process group, stdin a pipe, no inherited descriptor
// above 2, its leftovers killed when it ends), and a tool that declares
// runtime.sandbox or runtime.run_as confined by one of two mechanisms
// (DESIGN.md §6, issue 3):
//
//   - bwrap: bubblewrap builds a root from a tmpfs, explicit read-only binds
//     of the system directories and the declared paths (bound by file
//     descriptor, so a symlink swapped in after the check cannot redirect a
//     bind), new user, pid, ipc, uts, cgroup and (for net: none) network
//     namespaces, no capabilities, no nested user namespaces; the root is
//     remounted read-only once every mount is in place.
//   - landlock: the toolbox binary re-executes itself as a hidden helper
//     (see Init) that restricts one of its threads with a Landlock ruleset
//     of a fixed ABI (6: filesystem rights, signal and abstract unix socket
//     scoping; a kernel without it is refused, never served best effort),
//     gives it a new IPC namespace (as root), takes root's capabilities
//     away from it and starts the tool from that thread. The
//     helper stays the tool's parent as a child subreaper, so every
//     descendant dies when the tool ends.
//
// Under both, the tool also gets a seccomp filter (internal/seccompasm,
// pre-assembled on amd64 in seccomp_programs_amd64.go;
// DESIGN.md §6 "Kernel rules"): sockets only of the declared network,
// no setuid or setgid file, no new user namespace, no io_uring, no
// TIOCSTI; unsandboxed children of a root toolbox get a TIOCSTI filter
// (PrepareForkThread).
//
// An unconfined tool (mechanism None) goes through the same helper with
// nothing restricted: it is only the tool's reaper, so that under every
// mechanism no descendant of a tool, setsid ones included, outlives the
// tool or toolbox itself (DESIGN.md §5). Output is read from pipes
// toolbox owns, so that every byte a tool wrote before it exited is
// delivered (see Command and Process.OutputCut).
//
// Every mechanism, none included, also applies the Spec's resource Limits
// (rlimits before the tool's first instruction, sized tmpfs under bwrap,
// a cgroup v2 per call where one is delegated: see Limits, limits_start.go
// and DetectCgroup), refusing a limit nothing here can enforce.
//
// What a later run trusts stays out of reach (DESIGN.md §6, issue 10):
// the host's /tmp is never given (tmp: shared is the toolbox's own scratch
// directory, SharedTmpDir); protected paths (Spec.Protected, Spec.Hidden)
// are masked by bwrap and refused by landlock; bwrap is the pinned binary
// (Spec.Bwrap), executed from the descriptor its hash was checked on; the
// tool's binary runs from its checked descriptor (Command.Exe,
// OpenExecutable); declared paths are opened once from their lock-time
// resolution without following symlinks; the rundir is made without
// following any (Spec.MakeRundir).
//
// Detect finds out by running them what this machine can enforce, and
// Resolve turns the operator's request (bwrap, landlock, auto, none) and
// the tool's declaration into a mechanism or a *RefusalError naming the
// field that cannot be honoured. Nothing here ever runs a tool with less
// isolation than its Spec asks for: Cmd and Start refuse the same fields
// Resolve refuses, so a caller that skips Resolve still fails closed.
//
// What it deliberately does not do: choose defaults for a tool (the
// runspec package turns a locked tool into a Spec and a Command), build the
// tool's environment (the Command's Env is used as it is, except TMPDIR,
// set to where the sandbox put the tool's scratch directory; nothing of
// the caller's is added), or choose limits (the compiler resolves them).
// A landlock tool gets no /proc at all: Landlock has
// no pid namespace and cannot tell the tool's own /proc entries from
// toolbox's, whose environ a landlocked root process could still read
// (tools that need /proc use bwrap). It runs on Linux only.
package sandbox
