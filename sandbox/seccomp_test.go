package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// expect is one prober op (see probeArg) and the result it must give.
type expect struct{ op, want string }

// probeUnder runs the prober under spec with the ops of es, in order, and
// fails t for every op whose result differs. Ops naming a system call
// this architecture lacks (arm64 has no open, chmod, mkdir…) are dropped.
func probeUnder(t *testing.T, spec *Spec, es []expect) {
	t.Helper()
	exe := proberIn(t, spec)
	var ops []string
	var kept []expect
	for _, e := range es {
		name, _, _ := strings.Cut(e.op, ":")
		if n, ok := rawCallOf[name]; ok && !hasSyscall(n) {
			continue
		}
		ops = append(ops, e.op)
		kept = append(kept, e)
	}
	var out, errb bytes.Buffer
	p, err := Start(pin(spec), Command{Path: exe, Args: append([]string{testToolArg, probeArg}, ops...), Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("starting the prober under %s: %v", spec.Mechanism, err)
	}
	code, err := p.Wait()
	if err != nil || code != 0 {
		t.Fatalf("prober under %s: exit %d, %v\nstdout:\n%s\nstderr:\n%s", spec.Mechanism, code, err, out.String(), errb.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if op, res, ok := strings.Cut(sc.Text(), " "); ok {
			got[op] = res
		}
	}
	for _, e := range kept {
		if got[e.op] != e.want {
			t.Errorf("%s under %s: got %q, want %s", e.op, describe(spec), got[e.op], e.want)
		}
	}
}

// proberIn returns the prober's path for spec: the test binary where it
// is, which becomes the tool's directory when spec has none, else a copy
// in spec's tool directory (the test binary's own directory may be closed
// to a run_as user).
func proberIn(t *testing.T, spec *Spec) string {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	if spec.ToolDir == "" {
		spec.ToolDir = filepath.Dir(exe)
		return exe
	}
	if within(exe, spec.ToolDir) {
		return exe
	}
	dst := filepath.Join(spec.ToolDir, "prober")
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	data, err := os.ReadFile(exe)
	must(t, err)
	must(t, os.WriteFile(dst, data, 0o755))
	return dst
}

// rawCallOf names the system call of the probes that call one directly.
var rawCallOf = map[string]string{
	"chmod": "chmod", "open-creat": "open", "creat": "creat", "mkdir": "mkdir", "mknod": "mknod",
	"chown": "chown", "fchmodat2": "fchmodat2",
}

func hasSyscall(name string) bool {
	info, err := arch.GetInfo("")
	if err != nil {
		return false
	}
	_, ok := info.SyscallNames[name]
	return ok
}

func describe(s *Spec) string {
	d := string(s.Mechanism)
	if d == "" {
		d = "none"
	}
	if s.NetNone {
		d += " net:none"
	} else {
		d += " net:host"
	}
	if s.UnixSockets {
		d += " unix-sockets"
	}
	if s.RunAs != nil {
		d += fmt.Sprintf(" uid:%d", s.RunAs.UID)
	}
	return d
}

// net: none refuses a socket of every family, net: host only inet,
// inet6 (MPTCP included) and netlink route; AF_UNIX only with
// UnixSockets; socketpair gives connected pairs, datagram pairs only with
// UnixSockets. Twin: under None every one of these opens (so each refusal
// is the filter's, not the machine's).
func TestSeccompSocketFamilies(t *testing.T) {
	type variant struct {
		m             Mechanism
		netNone, unix bool
	}
	variants := []variant{
		{Bwrap, true, false}, {Bwrap, true, true}, {Bwrap, false, false}, {Bwrap, false, true},
		{Landlock, false, false}, {Landlock, false, true},
	}
	expected := func(v variant) []expect {
		const no = "EAFNOSUPPORT"
		inet, unixS := no, no
		if !v.netNone {
			inet = "ok"
		}
		if v.unix {
			unixS = "ok"
		}
		return []expect{
			{"socket:inet", inet}, {"socket:udp", inet}, {"socket:inet6", inet}, {"socket:mptcp", inet},
			{"socket:netlink-route", inet},
			{"socket:vsock", no}, {"socket:netlink-diag", no}, {"socket:alg", no}, {"socket-hibits", no},
			{"socket:unix", unixS}, {"socket:unix-dgram", unixS},
			{"socketpair:stream", "ok"}, {"socketpair:seqpacket", "ok"}, {"socketpair:dgram", unixS},
		}
	}
	for _, v := range variants {
		spec := &Spec{Mechanism: v.m, NetNone: v.netNone, UnixSockets: v.unix}
		t.Run(strings.ReplaceAll(describe(spec), " ", "/"), func(t *testing.T) {
			requireMechanism(t, v.m)
			if v.m == Landlock && v.unix && os.Geteuid() == 0 {
				// As root landlock refuses unix sockets
				// (TestLandlockRefusesRootUnixSockets): as nobody.
				uid, gid := testenv.Nobody(t)
				spec.RunAs = &Identity{UID: uid, GID: gid, Groups: []uint32{gid}}
				spec.ToolDir = newTree(t).Tool
			}
			probeUnder(t, spec, expected(v))
		})
	}
	t.Run("none-twin", func(t *testing.T) {
		var all []expect
		for _, e := range expected(variant{Bwrap, false, true}) {
			if e.op != "socket:alg" { // AF_ALG may be missing from the kernel
				all = append(all, expect{e.op, "ok"})
			}
		}
		probeUnder(t, &Spec{}, all)
	})
}

// No sandboxed tool creates a setuid or setgid file: not by chmod (any
// of four calls), nor by creating one with that mode (open, openat with
// O_CREAT or O_TMPFILE, creat, mknod, mknodat), nor a setgid directory.
// Twins: the same calls with ordinary modes work inside the write grant
// (chmod except for a landlock tool as root, see TestLandlockRootOwnerOps).
// Afterwards no file in the grant carries either bit.
func TestSeccompSetuidSetgid(t *testing.T) {
	nobody := &Identity{UID: 65534, GID: 65534, Groups: []uint32{65534}}
	cases := []struct {
		name  string
		m     Mechanism
		runAs *Identity
	}{{"bwrap", Bwrap, nil}, {"landlock", Landlock, nil}, {"landlock-nobody", Landlock, nobody}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireMechanism(t, c.m)
			if c.runAs != nil {
				requireRoot(t)
				testenv.Nobody(t)
			}
			tr := newTree(t)
			w := tr.Work
			plainChmod := "ok"
			if c.m == Landlock && c.runAs == nil && os.Geteuid() == 0 {
				plainChmod = "EPERM"
			}
			es := []expect{
				{"open-creat:" + w + "/a:4755", "EPERM"},
				{"openat-creat:" + w + "/b:2755", "EPERM"},
				{"creat:" + w + "/c:6755", "EPERM"},
				{"tmpfile:" + w + ":4755:t1", "EPERM"},
				{"mkdir:" + w + "/d:2755", "EPERM"},
				{"mkdirat:" + w + "/e:4755", "EPERM"},
				{"mknod:" + w + "/f:4755", "EPERM"},
				{"mknodat:" + w + "/g:2755", "EPERM"},
				// twins
				{"openat-creat:" + w + "/h:755", "ok"},
				{"open-creat:" + w + "/h2:644", "ok"},
				{"creat:" + w + "/h3:644", "ok"},
				{"tmpfile:" + w + ":644:t2", "ok"},
				{"mkdir:" + w + "/i:755", "ok"},
				{"mknodat:" + w + "/j:644", "ok"},
				// chmod of a file the tool created
				{"chmod:" + w + "/h:4755", "EPERM"},
				{"fchmodat:" + w + "/h:2755", "EPERM"},
				{"fchmodat2:" + w + "/h:4755", "EPERM"},
				{"fchmod:" + w + "/h:6755", "EPERM"},
				{"chmod:" + w + "/h:700", plainChmod},
			}
			spec := tr.spec(c.m)
			spec.RunAs = c.runAs
			probeUnder(t, spec, es)
			noSUGID(t, w)
			if plainChmod == "ok" {
				if st, err := os.Stat(w + "/h"); err != nil || st.Mode().Perm() != 0o700 {
					t.Errorf("chmod 700 inside the write grant did not apply: %v %v", st.Mode(), err)
				}
			}
		})
	}
	t.Run("none-twin", func(t *testing.T) {
		// Unsandboxed, the same calls make setuid files: the attack is real.
		dir := t.TempDir()
		probeUnder(t, &Spec{}, []expect{{"open-creat:" + dir + "/a:4755", "ok"}, {"chmod:" + dir + "/a:4755", "ok"}})
		if st, err := os.Stat(dir + "/a"); err != nil || st.Mode()&fs.ModeSetuid == 0 {
			t.Errorf("no setuid file made without a sandbox: %v, %v", st.Mode(), err)
		}
	})
}

// noSUGID fails t when a file below dir has the setuid or setgid bit.
func noSUGID(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if st, err := os.Lstat(p); err == nil && st.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			t.Errorf("%s has mode %v", p, st.Mode())
		}
		return nil
	})
}

// A landlock tool running as root owns every root file it can name, and
// Landlock has no right for mode, owner, times or xattrs: the filter
// refuses those calls outright (also the file-attribute ioctl on a
// readable file). Twin: under bwrap the same calls on a read-only bind
// fail with EROFS (a mount namespace covers them), and outside the grants
// the file does not exist. The host files are unchanged.
func TestLandlockRootOwnerOps(t *testing.T) {
	requireRoot(t)
	tr := newTree(t)
	secret, in := tr.Out+"/secret.txt", tr.In+"/a.txt"
	before := statAll(t, secret, in)
	ops := func(target string) []string {
		return []string{"chmod:" + target + ":600", "fchmodat:" + target + ":600", "chown:" + target,
			"utimes:" + target, "setxattr:" + target, "removexattr:" + target}
	}
	t.Run("landlock", func(t *testing.T) {
		requireMechanism(t, Landlock)
		var es []expect
		for _, op := range append(ops(secret), ops(in)...) {
			es = append(es, expect{op, "EPERM"})
		}
		es = append(es, expect{"setflags:" + in, "EPERM"})
		probeUnder(t, tr.spec(Landlock), es)
	})
	t.Run("bwrap", func(t *testing.T) {
		requireMechanism(t, Bwrap)
		var es []expect
		for _, op := range ops(in) {
			es = append(es, expect{op, "EROFS"})
		}
		for _, op := range ops(secret) {
			es = append(es, expect{op, "ENOENT"})
		}
		probeUnder(t, tr.spec(Bwrap), es)
	})
	if after := statAll(t, secret, in); after != before {
		t.Errorf("host files changed:\nbefore %s\nafter  %s", before, after)
	}
	t.Run("none-twin", func(t *testing.T) {
		// Without a sandbox each call goes through (on a copy).
		f := t.TempDir() + "/f"
		must(t, os.WriteFile(f, []byte("x"), 0o644))
		es := []expect{{"setxattr:" + f, "ok"}, {"setflags:" + f, "ok"}}
		for _, op := range ops(f) {
			if !strings.HasPrefix(op, "setxattr") {
				es = append(es, expect{op, "ok"})
			}
		}
		probeUnder(t, &Spec{}, es)
	})
}

// statAll describes mode, owner, times, xattrs and flags of files.
func statAll(t *testing.T, files ...string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range files {
		var st unix.Stat_t
		must(t, unix.Stat(f, &st))
		sz, _ := unix.Listxattr(f, nil)
		var flags uint32
		if fd, err := unix.Open(f, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			flags, _ = unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
			unix.Close(fd)
		}
		fmt.Fprintf(&b, "%s mode %o uid %d gid %d mtime %d xattrs %d flags %#x; ", f, st.Mode, st.Uid, st.Gid, st.Mtim.Sec, sz, flags)
	}
	return b.String()
}

// The landlock helper gives the tool a new IPC namespace: a System V
// shared memory segment of the host cannot be found. bwrap has its own
// (--unshare-all). Twin: unsandboxed, the same lookup finds it.
func TestIPCNamespace(t *testing.T) {
	requireRoot(t)
	key := 0x7b00000 + os.Getpid()%0xfffff
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	must(t, err)
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	op := fmt.Sprintf("shm:%d", key)
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			probeUnder(t, &Spec{Mechanism: m}, []expect{{op, "ENOENT"}})
		})
	}
	t.Run("none-twin", func(t *testing.T) { probeUnder(t, &Spec{}, []expect{{op, "ok"}}) })
}

// Kernel interfaces a tool has no use for are refused: new user
// namespaces (clone and unshare), io_uring, openat2 and clone3 (ENOSYS,
// so that libc falls back), the keyring, userfaultfd, ptrace and
// process_vm_readv. Twin: unsandboxed every one of them works (clone3
// then fails with EINVAL on its empty argument, not ENOSYS), and plain
// openat works under the filter.
func TestSeccompKernelSurface(t *testing.T) {
	es := []expect{
		{"userns", "EPERM"}, {"unshare-user", "EPERM"}, {"io_uring", "ENOSYS"}, {"openat2", "ENOSYS"},
		{"clone3", "ENOSYS"}, {"keyctl", "EPERM"}, {"userfaultfd", "EPERM"}, {"process_vm_readv", "EPERM"},
		{"ptrace", "EPERM"}, {"openat", "ok"},
	}
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			probeUnder(t, &Spec{Mechanism: m}, es)
		})
	}
	t.Run("none-twin", func(t *testing.T) {
		requireRoot(t)
		var twin []expect
		for _, e := range es {
			want := "ok"
			switch e.op {
			case "clone3":
				want = "EINVAL"
			case "unshare-user":
				want = "EINVAL" // a multi-threaded process may not; the filter answers first
			}
			twin = append(twin, expect{e.op, want})
		}
		probeUnder(t, &Spec{}, twin)
	})
}

// A landlock tool cannot watch a host directory outside its grants with
// inotify (Landlock does not confine watches: one on toolbox's state dir
// reported the names of the records, tokens and slots made there), so
// inotify gets ENOSYS under landlock. Twins: a bwrap tool watches its own
// mounts (a host directory it was not given does not exist there); an
// unconfined tool watches the host directory.
func TestInotifyConfined(t *testing.T) {
	outside := t.TempDir()
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			es := []expect{{"inotify:" + outside, "ENOSYS"}, {"inotify:/usr", "ENOSYS"}}
			if m == Bwrap {
				es = []expect{{"inotify:" + outside, "ENOENT"}, {"inotify:/usr", "ok"}}
			}
			probeUnder(t, &Spec{Mechanism: m}, es)
		})
	}
	t.Run("none-twin", func(t *testing.T) {
		probeUnder(t, &Spec{}, []expect{{"inotify:" + outside, "ok"}})
	})
}

// glibc starts threads with clone3 and falls back to clone on ENOSYS: a
// threaded program still works under the filter.
func TestSeccompThreadsStillWork(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no system python3 to start a thread with glibc")
	}
	script := py + ` -c 'import threading; t = threading.Thread(target=print, args=("thread",)); t.start(); t.join()'`
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			if r := runSh(t, &Spec{Mechanism: m}, script); r.code != 0 || r.stdout != "thread\n" {
				t.Fatalf("threaded python: exit %d, %q, %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// Under bwrap the root is read-only once every mount is in place: a write
// outside the declared paths fails with EROFS instead of landing in a
// throwaway tmpfs. Twins: the write grant, a private or the shared /tmp
// and /dev/null stay writable.
func TestBwrapRootReadOnly(t *testing.T) {
	requireMechanism(t, Bwrap)
	tr := newTree(t)
	es := []expect{
		{"write:/x", "EROFS"}, {"mkdir:/d:755", "EROFS"}, {"write:" + tr.Base + "/x", "EROFS"},
		{"write:" + tr.Work + "/y", "ok"}, {"write:/tmp/y", "ok"}, {"write:/dev/null", "ok"},
	}
	spec := tr.spec(Bwrap)
	spec.TmpPrivate = true
	probeUnder(t, spec, es)
	probeUnder(t, tr.spec(Bwrap), []expect{{"write:/x", "EROFS"}, {"write:" + tr.Work + "/z", "ok"}})
	t.Cleanup(func() { os.Remove("/tmp/y") }) // in case /tmp was the host's
	if _, err := os.Stat(tr.Work + "/y"); err != nil {
		t.Errorf("the write into the grant did not reach the host: %v", err)
	}
}

// An unsandboxed tool run by root cannot type into a terminal it opens
// (TIOCSTI), even with garbage in the upper half of the ioctl command.
// Twin: other ioctls on the same terminal work, so it was reachable.
func TestTIOCSTIUnsandboxed(t *testing.T) {
	requireRoot(t)
	slave := openPTY(t)
	termios, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	must(t, err)
	termios.Lflag &^= unix.ICANON | unix.ECHO
	must(t, unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, termios))
	pts := slave.Name()
	probeUnder(t, &Spec{}, []expect{
		{"tiocsti:" + pts, "EPERM"}, {"tiocsti:" + pts + ":hibits", "EPERM"}, {"tiocgwinsz:" + pts, "ok"},
	})
	n, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
	must(t, err)
	if n != 0 {
		t.Errorf("%d bytes were typed into the terminal", n)
	}
}
