package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// probeArg makes the test binary a system-call prober (see TestMain):
// argv = [exe, testToolArg, probeArg, op…]. Each op is NAME or
// NAME:ARG[:ARG], run in order; for each the prober prints one line
// "OP result" (OP as given), where result is "ok" or the errno's name
// (EPERM, EAFNOSUPPORT…). It exits 0 unless an op is unknown.
const probeArg = "syscalls"

// syscallProbe runs the ops of argv (see probeArg).
func syscallProbe(ops []string) int {
	for _, op := range ops {
		name, rest, _ := strings.Cut(op, ":")
		f, ok := probeOps[name]
		if !ok {
			fmt.Printf("%s unknown\n", name)
			return 2
		}
		var args []string
		if rest != "" {
			args = strings.Split(rest, ":")
		}
		fmt.Printf("%s %s\n", op, errName(f(args)))
	}
	return 0
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		if n := unix.ErrnoName(en); n != "" {
			return n
		}
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// sockets are the socket(2) arguments probed by name.
var sockets = map[string][3]int{
	"inet":          {unix.AF_INET, unix.SOCK_STREAM, 0},
	"udp":           {unix.AF_INET, unix.SOCK_DGRAM, 0},
	"inet6":         {unix.AF_INET6, unix.SOCK_STREAM, 0},
	"mptcp":         {unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP},
	"vsock":         {unix.AF_VSOCK, unix.SOCK_STREAM, 0},
	"unix":          {unix.AF_UNIX, unix.SOCK_STREAM, 0},
	"unix-dgram":    {unix.AF_UNIX, unix.SOCK_DGRAM, 0},
	"netlink-route": {unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
	"netlink-diag":  {unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG},
	"alg":           {unix.AF_ALG, unix.SOCK_SEQPACKET, 0},
}

// socketTypes are the socketpair(2) types probed by name.
var socketTypes = map[string]int{
	"stream":    unix.SOCK_STREAM | unix.SOCK_CLOEXEC,
	"seqpacket": unix.SOCK_SEQPACKET,
	"dgram":     unix.SOCK_DGRAM | unix.SOCK_CLOEXEC,
}

func sysno(name string) uintptr {
	info, err := arch.GetInfo("")
	if err != nil {
		panic(err)
	}
	n, ok := info.SyscallNames[name]
	if !ok {
		panic("no system call " + name + " here")
	}
	return uintptr(n)
}

func ptr(s string) uintptr {
	p, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return uintptr(unsafe.Pointer(p))
}

func octal(s string) uintptr {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		panic(err)
	}
	return uintptr(n)
}

func errno(r1 uintptr, e syscall.Errno) error {
	if e != 0 {
		return e
	}
	if int(r1) > 2 && r1 < 1<<20 {
		// Most probes return a descriptor: close it.
		unix.Close(int(r1))
	}
	return nil
}

func raw(name string, args ...uintptr) error {
	var a [6]uintptr
	copy(a[:], args)
	r1, _, e := unix.Syscall6(sysno(name), a[0], a[1], a[2], a[3], a[4], a[5])
	return errno(r1, e)
}

// openFd opens p for the ops that act on a descriptor.
func openFd(p string, flags int) (int, error) {
	return unix.Open(p, flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
}

// probeOps are the ops of the prober. Paths and modes come as arguments;
// modes are octal.
var probeOps = map[string]func(a []string) error{
	"socket": func(a []string) error {
		s := sockets[a[0]]
		return raw("socket", uintptr(s[0]), uintptr(s[1]), uintptr(s[2]))
	},
	// socket-hibits: AF_INET with garbage in the upper half of the
	// family, which the kernel truncates away.
	"socket-hibits": func(a []string) error {
		return raw("socket", 1<<32|unix.AF_INET, unix.SOCK_STREAM, 0)
	},
	"socketpair": func(a []string) error {
		var fds [2]int32
		err := raw("socketpair", unix.AF_UNIX, uintptr(socketTypes[a[0]]), 0, uintptr(unsafe.Pointer(&fds)))
		if err == nil {
			unix.Close(int(fds[0]))
			unix.Close(int(fds[1]))
		}
		return err
	},
	"chmod":     func(a []string) error { return raw("chmod", ptr(a[0]), octal(a[1])) },
	"fchmodat":  func(a []string) error { return raw("fchmodat", atFDCWD, ptr(a[0]), octal(a[1])) },
	"fchmodat2": func(a []string) error { return raw("fchmodat2", atFDCWD, ptr(a[0]), octal(a[1]), 0) },
	"fchmod": func(a []string) error {
		fd, err := openFd(a[0], unix.O_RDONLY)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return raw("fchmod", uintptr(fd), octal(a[1]))
	},
	"open-creat": func(a []string) error {
		return raw("open", ptr(a[0]), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, octal(a[1]))
	},
	"openat-creat": func(a []string) error {
		return raw("openat", atFDCWD, ptr(a[0]), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, octal(a[1]))
	},
	"creat": func(a []string) error { return raw("creat", ptr(a[0]), octal(a[1])) },
	// tmpfile: an unnamed file in directory a[0], given a name by linkat.
	"tmpfile": func(a []string) error {
		fd, _, e := unix.Syscall6(sysno("openat"), atFDCWD, ptr(a[0]), unix.O_TMPFILE|unix.O_WRONLY, octal(a[1]), 0, 0)
		if e != 0 {
			return e
		}
		defer unix.Close(int(fd))
		return unix.Linkat(int(fd), "", unix.AT_FDCWD, a[0]+"/"+a[2], unix.AT_EMPTY_PATH)
	},
	"mkdir":   func(a []string) error { return raw("mkdir", ptr(a[0]), octal(a[1])) },
	"mkdirat": func(a []string) error { return raw("mkdirat", atFDCWD, ptr(a[0]), octal(a[1])) },
	"mknod":   func(a []string) error { return raw("mknod", ptr(a[0]), unix.S_IFREG|octal(a[1]), 0) },
	"mknodat": func(a []string) error { return raw("mknodat", atFDCWD, ptr(a[0]), unix.S_IFREG|octal(a[1]), 0) },
	"chown":   func(a []string) error { return raw("chown", ptr(a[0]), 0, 0) },
	"utimes": func(a []string) error {
		ts := []unix.Timespec{{Sec: 1}, {Sec: 1}}
		return unix.UtimesNanoAt(unix.AT_FDCWD, a[0], ts, 0)
	},
	"setxattr":    func(a []string) error { return unix.Setxattr(a[0], "user.toolbox", []byte("x"), 0) },
	"removexattr": func(a []string) error { return unix.Removexattr(a[0], "user.toolbox") },
	"setflags": func(a []string) error {
		fd, err := openFd(a[0], unix.O_RDONLY)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
		if err != nil {
			return err
		}
		return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsNodumpFl))
	},
	// write: create (or truncate) a[0] and write to it.
	"write": func(a []string) error { return os.WriteFile(a[0], []byte("x\n"), 0o644) },
	"shm": func(a []string) error {
		key, _ := strconv.Atoi(a[0])
		_, err := unix.SysvShmGet(key, 0, 0)
		return err
	},
	// userns: a child in a new user namespace (clone with CLONE_NEWUSER).
	"userns": func(a []string) error {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		return unwrapExec(cmd.Run())
	},
	"unshare-user": func(a []string) error { return raw("unshare", unix.CLONE_NEWUSER) },
	"io_uring": func(a []string) error {
		var params [120]byte // struct io_uring_params, zeroed
		return raw("io_uring_setup", 1, uintptr(unsafe.Pointer(&params)))
	},
	"openat2": func(a []string) error {
		how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC}
		fd, err := unix.Openat2(unix.AT_FDCWD, "/usr", &how)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"openat": func(a []string) error {
		return raw("openat", atFDCWD, ptr("/usr"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	},
	// clone3 with an empty argument structure: EINVAL when the call is
	// there, ENOSYS when it is not.
	"clone3": func(a []string) error { return raw("clone3", 0, 0) },
	"inotify": func(a []string) error {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.InotifyAddWatch(fd, a[0], unix.IN_CREATE)
		return err
	},
	"keyctl": func(a []string) error {
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_PROCESS_KEYRING, 1, 0, 0)
		return err
	},
	"userfaultfd": func(a []string) error {
		const uffdUserModeOnly = 1
		return raw("userfaultfd", unix.O_CLOEXEC|uffdUserModeOnly)
	},
	"process_vm_readv": func(a []string) error {
		var src, dst [8]byte
		l := []unix.Iovec{{Base: &dst[0], Len: 8}}
		r := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 8}}
		_, err := unix.ProcessVMReadv(os.Getpid(), l, r, 0)
		return err
	},
	"ptrace": func(a []string) error {
		cmd := exec.Command("/bin/sleep", "10")
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		err := unix.PtraceSeize(cmd.Process.Pid)
		return err
	},
	// umount2 detaches the mount on a[0] (flags MNT_DETACH); with a
	// second argument "badflags", with flags the kernel refuses (EINVAL)
	// before it checks any privilege, so that EPERM there can only come
	// from the seccomp filter.
	"umount2": func(a []string) error {
		flags := uintptr(unix.MNT_DETACH)
		if len(a) > 1 && a[1] == "badflags" {
			flags = 1 << 20
		}
		return raw("umount2", ptr(a[0]), flags)
	},
	// fsopen opens a tmpfs context, the first step of mounting by the new
	// API; move-tmp tries to move the mount on a[0] onto itself.
	"fsopen": func(a []string) error {
		fd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"move-tmp": func(a []string) error { return unix.MoveMount(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[0], 0) },
	"mount-tmpfs": func(a []string) error {
		return unix.Mount("tmpfs", a[0], "tmpfs", unix.MS_NOSUID, "")
	},
	// tiocsti types one character into the terminal a[0]; with a second
	// argument "hibits", through a command with garbage in its upper half.
	"tiocsti": func(a []string) error {
		fd, err := openFd(a[0], unix.O_RDWR)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		cmd := uintptr(unix.TIOCSTI)
		if len(a) > 1 && a[1] == "hibits" {
			cmd |= 1 << 32
		}
		c := byte('x')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), cmd, uintptr(unsafe.Pointer(&c)))
		return errno(0, e)
	},
	"tiocgwinsz": func(a []string) error {
		fd, err := openFd(a[0], unix.O_RDWR)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		return err
	},
}

const atFDCWD = ^uintptr(99) // AT_FDCWD (-100) as a register value

func unwrapExec(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

const fsNodumpFl = 0x40 // FS_NODUMP_FL (linux/fs.h)
