package sandbox

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/internal/seccompasm"
)

// evalFilter runs prog (as compiled for the kernel) on one system call of
// this architecture, as the kernel would, and returns its action.
func evalFilter(t *testing.T, prog []unix.SockFilter, auditArch uint32, name string, args ...uint64) uint32 {
	t.Helper()
	info, err := arch.GetInfo("")
	must(t, err)
	nr, ok := info.SyscallNames[name]
	if !ok {
		t.Fatalf("no system call %s here", name)
	}
	raw := make([]bpf.RawInstruction, len(prog))
	for i, f := range prog {
		raw[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	insts, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the program does not disassemble")
	}
	vm, err := bpf.NewVM(insts)
	must(t, err)
	// struct seccomp_data as a little-endian kernel lays it out, with
	// every 32-bit word stored big-endian because the VM loads that way.
	data := make([]byte, 64)
	be := binary.BigEndian
	be.PutUint32(data[0:], uint32(nr))
	be.PutUint32(data[4:], auditArch)
	for i, a := range args {
		be.PutUint32(data[16+8*i:], uint32(a))
		be.PutUint32(data[16+8*i+4:], uint32(a>>32))
	}
	out, err := vm.Run(data)
	must(t, err)
	return uint32(out)
}

// The compiled filters decide each call as designed, evaluated in a BPF
// interpreter: calls refused with their errno, neighbours allowed, the
// upper half of 32-bit arguments ignored where the kernel ignores it and
// refused where it cannot be trusted, and a call whose argument equals
// another call's number judged as itself (the library's assembler alone
// would not: see seccompasm's policySet).
func TestFilterDecisions(t *testing.T) {
	info, err := arch.GetInfo("")
	must(t, err)
	native := uint32(info.ID)
	const (
		allow  = 0x7fff0000
		perm   = 0x50000 | uint32(unix.EPERM)
		nosys  = 0x50000 | uint32(unix.ENOSYS)
		family = 0x50000 | uint32(unix.EAFNOSUPPORT)
		kill   = 0x80000000
		hi     = uint64(1) << 32
	)
	type call struct {
		name string
		args []uint64
		want uint32
	}
	atCWD := uint64(0xffffffffffffff9c)
	common := []call{
		{"read", []uint64{0, 0, 0}, allow},
		{"io_uring_setup", nil, nosys}, {"openat2", nil, nosys}, {"clone3", nil, nosys},
		{"keyctl", nil, perm}, {"bpf", nil, perm}, {"ptrace", nil, perm}, {"userfaultfd", nil, perm},
		{"unshare", []uint64{unix.CLONE_NEWUSER}, perm}, {"unshare", []uint64{unix.CLONE_NEWNS}, allow},
		{"clone", []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, perm},
		{"clone", []uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, allow},
		{"ioctl", []uint64{1, unix.TIOCSTI}, perm}, {"ioctl", []uint64{1, hi | unix.TIOCSTI}, perm},
		{"ioctl", []uint64{1, unix.TIOCLINUX}, perm}, {"ioctl", []uint64{1, unix.TIOCGWINSZ}, allow},
		{"ioctl", []uint64{1, unix.TIOCSTI | 0x100}, allow},
		{"ioctl", []uint64{41, 41}, allow}, // arguments that look like socket's number
		{"openat", []uint64{atCWD, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, perm},
		{"openat", []uint64{atCWD, 0, seccompasm.OTmpfileBit | unix.O_DIRECTORY | unix.O_WRONLY, 0o2755}, perm},
		{"openat", []uint64{atCWD, 0, unix.O_CREAT | unix.O_WRONLY, 0o755}, allow},
		{"openat", []uint64{atCWD, 0, unix.O_RDONLY, 0o4755}, allow}, // no mode without O_CREAT
		{"openat", []uint64{atCWD, 0, unix.O_RDONLY, 41}, allow},
		{"mkdirat", []uint64{atCWD, 0, 0o2755}, perm}, {"mkdirat", []uint64{atCWD, 0, 0o755}, allow},
		{"mknodat", []uint64{atCWD, 0, unix.S_IFREG | 0o4755, 0}, perm},
		{"fchmodat", []uint64{atCWD, 0, 0o4755}, perm}, {"fchmod", []uint64{3, 0o2755}, perm},
		{"fchmodat2", []uint64{atCWD, 0, 0o6755, 0}, perm},
		{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, allow},
		{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}, allow},
		{"socketpair", []uint64{unix.AF_INET, unix.SOCK_STREAM}, family},
		{"prlimit64", []uint64{0, unix.RLIMIT_NOFILE, 1, 0}, allow},
		{"prlimit64", []uint64{1, unix.RLIMIT_NOFILE, 1, 0}, perm},
		{"prlimit64", []uint64{4242, unix.RLIMIT_NOFILE, 0, 1}, perm},
		{"prlimit64", []uint64{hi, unix.RLIMIT_NOFILE, 1, 0}, perm},
	}
	cases := []struct {
		rules filterRules
		calls []call
	}{
		{filterRules{}, []call{
			{"socket", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, family},
			{"socket", []uint64{unix.AF_INET, unix.SOCK_STREAM}, family},
			{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, family},
			{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_RAW}, family},
			{"fchmodat", []uint64{atCWD, 0, 0o755}, allow}, {"utimensat", nil, allow},
		}},
		{filterRules{UnixSockets: true}, []call{
			{"socket", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, allow},
			{"socket", []uint64{unix.AF_INET, unix.SOCK_STREAM}, family},
			{"socketpair", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, allow},
		}},
		{filterRules{NetHost: true}, []call{
			{"socket", []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, allow},
			{"socket", []uint64{unix.AF_INET6, unix.SOCK_DGRAM}, allow},
			{"socket", []uint64{hi | unix.AF_INET, unix.SOCK_STREAM}, family},
			{"socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, allow},
			{"socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG}, family},
			{"socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, hi | unix.NETLINK_ROUTE}, family},
			{"socket", []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, family},
			{"socket", []uint64{unix.AF_PACKET, unix.SOCK_RAW}, family},
			{"socket", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, family},
		}},
		{filterRules{NoOwnerOps: true}, []call{
			{"fchmodat", []uint64{atCWD, 0, 0o755}, perm}, {"fchownat", nil, perm}, {"utimensat", nil, perm},
			{"setxattr", nil, perm}, {"fremovexattr", nil, perm},
			{"ioctl", []uint64{3, unix.FS_IOC_SETFLAGS}, perm}, {"ioctl", []uint64{3, seccompasm.FSIocFSSetXattr}, perm},
			{"ioctl", []uint64{3, unix.FS_IOC_GETFLAGS}, allow},
			{"sched_setaffinity", []uint64{4242, 8, 0}, allow}, // bwrap: a pid of its own sandbox
			{"setpriority", []uint64{unix.PRIO_PROCESS, 4242, 19}, allow},
			{"inotify_init1", []uint64{0}, allow},
		}},
		{filterRules{HostNamespaces: true}, []call{
			{"inotify_init1", []uint64{0}, nosys}, {"inotify_init", nil, nosys}, {"inotify_add_watch", nil, allow},
			{"sched_setaffinity", []uint64{0, 8, 0}, allow}, {"sched_setaffinity", []uint64{4242, 8, 0}, perm},
			{"sched_setaffinity", []uint64{hi, 8, 0}, perm},
			{"sched_setscheduler", []uint64{4242, 0, 0}, perm}, {"sched_setparam", []uint64{4242, 0}, perm},
			{"sched_setattr", []uint64{4242, 0, 0}, perm}, {"sched_setattr", []uint64{0, 0, 0}, allow},
			{"setpriority", []uint64{unix.PRIO_PROCESS, 0, 19}, allow},
			{"setpriority", []uint64{unix.PRIO_PROCESS, 4242, 19}, perm},
			{"setpriority", []uint64{unix.PRIO_USER, 0, 19}, perm}, {"setpriority", []uint64{unix.PRIO_PGRP, 0, 19}, perm},
			{"ioprio_set", []uint64{seccompasm.IoprioWhoProcess, 0, 0}, allow}, {"ioprio_set", []uint64{seccompasm.IoprioWhoProcess, 4242, 0}, perm},
			{"ioprio_set", []uint64{3, 0, 0}, perm}, // IOPRIO_WHO_USER
			{"sched_getaffinity", []uint64{4242, 8, 0}, allow},
		}},
	}
	for _, c := range cases {
		prog, err := program(c.rules, false)
		must(t, err)
		for _, k := range append(slices.Clone(common), c.calls...) {
			if got := evalFilter(t, prog, native, k.name, k.args...); got != k.want {
				t.Errorf("%+v: %s%#x = %#x, want %#x", c.rules, k.name, k.args, got, k.want)
			}
		}
		if got := evalFilter(t, prog, native^1, "read"); got != kill {
			t.Errorf("%+v: a call of another ABI got %#x, want kill", c.rules, got)
		}
	}
	tty, err := program(filterRules{}, true)
	must(t, err)
	for _, k := range []call{
		{"ioctl", []uint64{0, unix.TIOCSTI}, perm}, {"ioctl", []uint64{0, hi | unix.TIOCLINUX}, perm},
		{"ioctl", []uint64{0, unix.TIOCGWINSZ}, allow}, {"socket", []uint64{unix.AF_VSOCK}, allow},
		{"fchmodat", []uint64{atCWD, 0, 0o4755}, allow},
	} {
		if got := evalFilter(t, tty, native, k.name, k.args...); got != k.want {
			t.Errorf("unsandboxed: %s%#x = %#x, want %#x", k.name, k.args, got, k.want)
		}
	}
}
