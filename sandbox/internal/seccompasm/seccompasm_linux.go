// Package seccompasm assembles the seccomp filters of package sandbox
// (DESIGN.md §6, "Kernel rules") with elastic/go-seccomp-bpf: the rules,
// and a compiler that chains the library's policies into one program.
//
// It is a package of its own so that a binary that does not assemble
// filters at run time does not link the library, whose package
// initialisation (the system call tables of every architecture) cost
// `toolbox run` 0.3 ms: on amd64, package sandbox uses the programs
// generated from this package by `go generate` (gen/), and its tests hold
// them equal to what Program assembles; elsewhere it calls Program.
package seccompasm

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Rules chooses the variant of the seccomp filter a sandboxed tool
// gets. The zero value is the strictest: no socket of any family,
// socketpair only for connected AF_UNIX pairs. Package sandbox mirrors it
// (its filterRules, field for field).
type Rules struct {
	// NetHost allows socket() for AF_INET and AF_INET6 (any protocol,
	// MPTCP included) and AF_NETLINK with NETLINK_ROUTE only (glibc's
	// getaddrinfo and Go's net.Interfaces read addresses through it).
	NetHost bool
	// UnixSockets allows socket(AF_UNIX) (Spec.UnixSockets).
	UnixSockets bool
	// NoOwnerOps denies the chmod, chown, utime and xattr families (and
	// the file-attribute ioctls): the tool's uid owns host files outside
	// its grants that Landlock has no right for (a landlock tool as uid 0).
	NoOwnerOps bool
	// HostNamespaces is for a tool that shares the host's pid and mount
	// namespaces (landlock): it denies changing the scheduling (nice,
	// affinity, policy, I/O priority) of any process but the caller, since
	// another pid may be outside the sandbox, and inotify, whose watches
	// Landlock does not confine (a watch on any host directory reports
	// the names of the files made there). Under bwrap every pid the tool
	// can name is its own sandbox's, every path one of its mounts, and
	// programs pin or renice their own threads by thread id.
	HostNamespaces bool
}

// Variants are the number of programs Program assembles: every Rules
// (four booleans), then the terminal filter.
const Variants = 17

// Variant is the Rules and tty of variant i (0 <= i < Variants): the
// bits of i are NetHost (1), UnixSockets (2), NoOwnerOps (4) and
// HostNamespaces (8); 16 is the terminal filter. Package sandbox indexes
// its generated programs so.
func Variant(i int) (r Rules, tty bool) {
	if i == Variants-1 {
		return Rules{}, true
	}
	return Rules{NetHost: i&1 != 0, UnixSockets: i&2 != 0, NoOwnerOps: i&4 != 0, HostNamespaces: i&8 != 0}, false
}

// Program assembles the filter of a tool confined under r, or with tty
// the filter of unsandboxed children (no TIOCSTI, no TIOCLINUX; r is
// then ignored), for the running architecture. Errors say what could
// not be assembled.
func Program(r Rules, tty bool) ([]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("building the seccomp filter: %w", err)
	}
	ps := TTYPolicies(info)
	if !tty {
		ps = ToolPolicies(r, info)
	}
	return compile(ps, info)
}

// Errors the filter returns. EAFNOSUPPORT is what a program sees on a
// kernel built without the family, which programs already handle; ENOSYS
// makes libc fall back to an older call whose arguments the filter can
// inspect (clone3 → clone, openat2 → openat) or report the feature
// missing (io_uring); EPERM is the answer to everything refused.
var (
	errnoFamily = seccomp.ActionErrno | seccomp.Action(unix.EAFNOSUPPORT)
	errnoNoSys  = seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)
	errnoPerm   = seccomp.ActionErrno | seccomp.Action(unix.EPERM)
)

const (
	modeSUGID = unix.S_ISUID | unix.S_ISGID
	// OTmpfileBit is __O_TMPFILE: O_TMPFILE without O_DIRECTORY.
	OTmpfileBit = unix.O_TMPFILE &^ unix.O_DIRECTORY
	// FSIocFSSetXattr is FS_IOC_FSSETXATTR, _IOW('X', 32, struct fsxattr)
	// (linux/fs.h; struct fsxattr is 28 bytes), missing from x/sys/unix.
	FSIocFSSetXattr = 0x401c5820
	// IoprioWhoProcess is IOPRIO_WHO_PROCESS (linux/ioprio.h).
	IoprioWhoProcess = 1
)

// policySet collects the rules of one filter. The library's assembler
// (v1.6.0) leaves an argument in the accumulator when a call's argument
// conditions do not match and goes on comparing it with the numbers of
// the calls checked after it, so a rule with conditions is only correct
// when nothing follows it. Rules without conditions therefore share one
// policy, and each call with conditions gets a policy of its own, whose
// rule is its last check; compile chains them.
type policySet struct {
	info   *arch.Info
	plain  []seccomp.SyscallGroup
	conded []seccomp.SyscallGroup // one call each
}

// deny refuses the calls names (those this architecture has) with action.
func (ps *policySet) deny(action seccomp.Action, names ...string) {
	if names = known(ps.info, names...); len(names) > 0 {
		ps.plain = append(ps.plain, seccomp.SyscallGroup{Action: action, Names: names})
	}
}

// denyIf refuses call name with action when any of the condition sets
// holds (all conditions of a set must hold).
func (ps *policySet) denyIf(action seccomp.Action, name string, sets ...[]seccomp.Condition) {
	if _, ok := ps.info.SyscallNames[name]; !ok {
		return
	}
	g := seccomp.SyscallGroup{Action: action}
	for _, cs := range sets {
		g.NamesWithCondtions = append(g.NamesWithCondtions, seccomp.NameWithConditions{Name: name, Conditions: cs})
	}
	ps.conded = append(ps.conded, g)
}

// policies returns the policies to chain, the plain one first.
func (ps *policySet) policies() []seccomp.Policy {
	var out []seccomp.Policy
	if len(ps.plain) > 0 {
		out = append(out, seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: ps.plain})
	}
	for _, g := range ps.conded {
		out = append(out, seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{g}})
	}
	return out
}

// mountCalls are the system calls that change mounts: the old API, the
// new one (fsopen to mount_setattr) and pivot_root.
var mountCalls = []string{"mount", "umount", "umount2", "move_mount", "fsopen", "fsconfig", "fsmount",
	"fspick", "open_tree", "open_tree_attr", "mount_setattr", "pivot_root"}

// ToolPolicies is the seccomp filter of a sandboxed tool: allow by
// default, refuse the calls listed here. Calls that need a capability the
// tool never has (module loading, raw I/O, open_by_handle_at…) are left
// to the kernel: bwrap drops every capability and the landlock
// helper takes root's away.
func ToolPolicies(r Rules, info *arch.Info) []seccomp.Policy {
	ps := &policySet{info: info}
	// Interfaces whose arguments a filter cannot see: io_uring performs
	// socket, open and connect operations without the matching system
	// call; openat2's mode and clone3's flags sit behind a pointer.
	ps.deny(errnoNoSys, "io_uring_setup", "io_uring_enter", "io_uring_register", "openat2", "clone3")
	// Kernel attack surface with no use in a tool: the keyring is not
	// namespaced, bpf and perf_event_open expose the kernel, ptrace and
	// process_vm_* read other processes, userfaultfd stalls the kernel
	// at will (a staple of exploits).
	ps.deny(errnoPerm, "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
		"ptrace", "process_vm_readv", "process_vm_writev", "userfaultfd")
	// No change to the mount table (decision D6): the shared tmp is a
	// tmpfs toolbox mounts on a host directory, and a tool that unmounted
	// or covered it would write to the disk beneath, outside tmp_size.
	// The kernel refuses these without CAP_SYS_ADMIN and Landlock refuses
	// them to a restricted process; the filter says so for every
	// mechanism, whatever capabilities a tool ends up with.
	ps.deny(errnoPerm, mountCalls...)
	if r.NoOwnerOps {
		ps.deny(errnoPerm, ownerOps...)
	}
	if len(families(r)) == 0 {
		ps.deny(errnoFamily, "socket")
	}
	// Only 32-bit ABIs multiplex sockets through socketcall, whose
	// arguments sit behind a pointer.
	ps.deny(errnoFamily, "socketcall")

	// No new user namespace: it hands a process every capability inside
	// it, and with them the whole namespaced attack surface. Landlock has
	// no rule for it; bwrap's --disable-userns is a second line.
	ps.denyIf(errnoPerm, "unshare", []seccomp.Condition{bitsSet(0, unix.CLONE_NEWUSER)})
	ps.denyIf(errnoPerm, "clone", []seccomp.Condition{bitsSet(0, unix.CLONE_NEWUSER)})
	// prlimit64 on another process needs only the same uid: no
	// capability, no Landlock right or scope covers it, so without a pid
	// namespace (landlock) a tool set the limits of toolbox, its daemon,
	// other tools' helpers and any process of its uid on the host. pid 0
	// (this process: getrlimit/setrlimit in libc and Go) stays allowed;
	// the pid is compared on all 64 bits, so garbage above pid 0 is denied.
	ps.denyIf(errnoPerm, "prlimit64", []seccomp.Condition{cond(0, seccomp.NotEqual, 0)})
	// The scheduling of another process needs the same uid and, for
	// nice, affinity and I/O priority, only that the target hold no
	// capability more than the caller: every other tool of a run_as user
	// (and, as root, every bwrap tool's process) is such a target. The
	// calling process (pid 0; for setpriority and ioprio_set "this
	// process", PRIO_PROCESS/IOPRIO_WHO_PROCESS with who 0) stays allowed:
	// nice, taskset and ionice of a command set it on themselves.
	// Under HostNamespaces only: a thread id is not 0 either, so a tool
	// that pins or renices its own threads (pthread_setaffinity_np) gets
	// EPERM there. inotify gets ENOSYS, on which watchers fall back to
	// polling (GNU tail -f, most file-watching libraries).
	if r.HostNamespaces {
		ps.deny(errnoNoSys, "inotify_init", "inotify_init1")
		for _, name := range []string{"sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"} {
			ps.denyIf(errnoPerm, name, []seccomp.Condition{cond(0, seccomp.NotEqual, 0)})
		}
		ps.denyIf(errnoPerm, "setpriority",
			[]seccomp.Condition{cond(0, seccomp.NotEqual, unix.PRIO_PROCESS)}, []seccomp.Condition{cond(1, seccomp.NotEqual, 0)})
		ps.denyIf(errnoPerm, "ioprio_set",
			[]seccomp.Condition{cond(0, seccomp.NotEqual, IoprioWhoProcess)}, []seccomp.Condition{cond(1, seccomp.NotEqual, 0)})
	}
	// No typing into a terminal (TIOCSTI) or pasting a console selection
	// into one (TIOCLINUX); with NoOwnerOps, no file attribute flags.
	cmds := []uint32{unix.TIOCSTI, unix.TIOCLINUX}
	if r.NoOwnerOps {
		cmds = append(cmds, unix.FS_IOC_SETFLAGS, FSIocFSSetXattr)
	}
	ps.denyIf(errnoPerm, "ioctl", ioctlCmds(cmds...)...)
	// No setuid or setgid bit (systemd's RestrictSUIDSGID= covers the
	// same calls): not by chmod, nor on a file or directory created with
	// a mode. open and openat take a mode only with O_CREAT or O_TMPFILE.
	mode := func(name string, arg uint32) {
		ps.denyIf(errnoPerm, name, []seccomp.Condition{bitsSet(arg, modeSUGID)})
	}
	if !r.NoOwnerOps {
		mode("chmod", 1)
		mode("fchmod", 1)
		mode("fchmodat", 2)
		mode("fchmodat2", 2)
	}
	for _, o := range []struct {
		name        string
		flags, mode uint32
	}{{"open", 1, 2}, {"openat", 2, 3}} {
		ps.denyIf(errnoPerm, o.name,
			[]seccomp.Condition{bitsSet(o.flags, unix.O_CREAT), bitsSet(o.mode, modeSUGID)},
			[]seccomp.Condition{bitsSet(o.flags, OTmpfileBit), bitsSet(o.mode, modeSUGID)})
	}
	mode("creat", 1)
	mode("mkdir", 1)
	mode("mkdirat", 2)
	mode("mknod", 1)
	mode("mknodat", 2)

	// Sockets: the families of r; NotEqual compares all 64 bits, so a
	// family with garbage in the upper half (which the kernel would
	// truncate away) is refused too.
	if fs := families(r); len(fs) > 0 {
		var others []seccomp.Condition
		for _, f := range fs {
			others = append(others, cond(0, seccomp.NotEqual, f))
		}
		sets := [][]seccomp.Condition{others}
		if r.NetHost {
			sets = append(sets, []seccomp.Condition{
				cond(0, seccomp.Equal, unix.AF_NETLINK), cond(2, seccomp.NotEqual, unix.NETLINK_ROUTE)})
		}
		ps.denyIf(errnoFamily, "socket", sets...)
	}
	pair := [][]seccomp.Condition{{cond(0, seccomp.NotEqual, unix.AF_UNIX)}}
	if !r.UnixSockets {
		// Only connection-oriented pairs (SOCK_STREAM = 1, SOCK_SEQPACKET
		// = 5, i.e. bit 0 set, bits 1 and 3 clear): a connected datagram
		// socket can still sendto() or connect() any other address.
		pair = append(pair,
			[]seccomp.Condition{cond(1, seccomp.BitsNotSet, 1)},
			[]seccomp.Condition{bitsSet(1, 2)},
			[]seccomp.Condition{bitsSet(1, 8)})
	}
	ps.denyIf(errnoFamily, "socketpair", pair...)
	return ps.policies()
}

// families are the socket families r allows: AF_UNIX with UnixSockets;
// with NetHost AF_INET and AF_INET6 (any protocol, MPTCP included) and
// AF_NETLINK, whose protocol must be NETLINK_ROUTE (glibc's getaddrinfo
// and Go's net.Interfaces read addresses through it; sock_diag would list
// every socket of the host).
func families(r Rules) []uint64 {
	var fs []uint64
	if r.UnixSockets {
		fs = append(fs, unix.AF_UNIX)
	}
	if r.NetHost {
		fs = append(fs, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK)
	}
	return fs
}

// ownerOps change a file's mode, owner, times or extended attributes:
// what the owner of a file may do to it without any capability.
var ownerOps = []string{
	"chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "fchown", "lchown", "fchownat", "chown32", "fchown32", "lchown32",
	"utime", "utimes", "futimesat", "utimensat", "utimensat_time64",
	"setxattr", "lsetxattr", "fsetxattr", "setxattrat",
	"removexattr", "lremovexattr", "fremovexattr", "removexattrat",
	"file_setattr",
}

// TTYPolicies is the filter of unsandboxed children: no TIOCSTI, no
// TIOCLINUX, nothing else.
func TTYPolicies(info *arch.Info) []seccomp.Policy {
	ps := &policySet{info: info}
	ps.denyIf(errnoPerm, "ioctl", ioctlCmds(unix.TIOCSTI, unix.TIOCLINUX)...)
	return ps.policies()
}

// ioctlCmds are condition sets matching ioctl(fd, cmd) for each cmd,
// comparing only the low 32 bits of cmd: the kernel reads it as an
// unsigned int, so a caller can put anything in the upper half and still
// reach the command.
func ioctlCmds(cmds ...uint32) [][]seccomp.Condition {
	var out [][]seccomp.Condition
	for _, c := range cmds {
		out = append(out, low32Equal(1, c))
	}
	return out
}

// low32Equal is "the low 32 bits of argument arg equal v", built from the
// library's bit tests (its Equal compares all 64 bits): no bit outside v
// is set in the low half, and every bit of v is.
func low32Equal(arg uint32, v uint32) []seccomp.Condition {
	cs := []seccomp.Condition{cond(arg, seccomp.BitsNotSet, uint64(^v))}
	for b := uint32(1); b != 0; b <<= 1 {
		if v&b != 0 {
			cs = append(cs, cond(arg, seccomp.BitsSet, uint64(b)))
		}
	}
	return cs
}

func cond(arg uint32, op seccomp.Operation, v uint64) seccomp.Condition {
	return seccomp.Condition{Argument: arg, Operation: op, Value: v}
}

func bitsSet(arg uint32, v uint64) seccomp.Condition { return cond(arg, seccomp.BitsSet, v) }

// known keeps the names this architecture has (arm64 has no open, chmod,
// mkdir…; only 32-bit ABIs have chown32 or socketcall): the library
// refuses a policy naming an unknown call.
func known(info *arch.Info, names ...string) []string {
	var out []string
	for _, n := range names {
		if _, ok := info.SyscallNames[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// compile assembles the policies for this architecture into one program
// that runs them in turn: each policy's default "allow" is dropped (but
// the last one's), so that a call none of its rules refuses falls
// through into the next policy, which loads the call number afresh. The
// library's programs are checked to be chainable: short enough that no
// jump was rewritten into a long one (fewer than 256 instructions), with
// "allow" only as the final instruction.
//
// An architecture check comes first: the library lets a call of another
// ABI (i386's int 0x80 on x86_64, whose socketcall the socket rules would
// not see) through to the default action, so such a call kills the
// process instead. The x32 ABI is refused by the library (ENOSYS).
func compile(ps []seccomp.Policy, info *arch.Info) ([]unix.SockFilter, error) {
	const archOffset = 4 // struct seccomp_data: int nr; __u32 arch; …
	allow := bpf.RetConstant{Val: uint32(seccomp.ActionAllow)}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}
	for i, p := range ps {
		insts, err := p.Assemble()
		if err != nil {
			return nil, fmt.Errorf("assembling the seccomp policy: %w", err)
		}
		if len(insts) > 255 || insts[len(insts)-1] != allow {
			return nil, fmt.Errorf("seccomp policy %d cannot be chained (%d instructions)", i, len(insts))
		}
		for _, in := range insts[:len(insts)-1] {
			if _, long := in.(bpf.Jump); long || in == allow {
				return nil, fmt.Errorf("seccomp policy %d cannot be chained: %v", i, in)
			}
		}
		if i < len(ps)-1 {
			insts = insts[:len(insts)-1]
		}
		prog = append(prog, insts...)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp program: %w", err)
	}
	if len(raw) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("the seccomp program has %d instructions, more than the kernel's %d", len(raw), unix.BPF_MAXINSNS)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		out[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return out, nil
}
