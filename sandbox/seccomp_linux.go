package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

//go:generate go run ./internal/seccompasm/gen

// filterRules chooses the variant of the seccomp filter a sandboxed tool
// gets (DESIGN.md §6, "Kernel rules"); seccompasm.Rules is the same
// struct, which assembles it. The zero value is the strictest:
// no socket of any family, socketpair only for connected AF_UNIX pairs.
type filterRules struct {
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

// compiled caches one program per variant: they depend on nothing else.
// Concurrent callers of one variant share one compilation (Prefetch starts
// it early).
var compiled sync.Map // filterKey → *compiledProg

type filterKey struct {
	rules filterRules
	tty   bool
}

type compiledProg struct {
	once sync.Once
	prog []unix.SockFilter
	err  error
}

// program returns the compiled filter for rules (tty: the unsandboxed
// filter, rules ignored).
func program(rules filterRules, tty bool) ([]unix.SockFilter, error) {
	k := filterKey{rules: rules, tty: tty}
	if tty {
		k.rules = filterRules{}
	}
	v, _ := compiled.LoadOrStore(k, &compiledProg{})
	c := v.(*compiledProg)
	c.once.Do(func() { c.prog, c.err = assemble(k.rules, tty) })
	return c.prog, c.err
}

// variantOf is the index of the filter of (rules, tty) among
// seccompasm's variants (seccompasm.Variant is its inverse): the bits of
// rules (NetHost 1, UnixSockets 2, NoOwnerOps 4, HostNamespaces 8), 16 for the terminal
// filter. The generated programs are indexed so.
func variantOf(rules filterRules, tty bool) int {
	if tty {
		return 16
	}
	i := 0
	if rules.NetHost {
		i |= 1
	}
	if rules.UnixSockets {
		i |= 2
	}
	if rules.NoOwnerOps {
		i |= 4
	}
	if rules.HostNamespaces {
		i |= 8
	}
	return i
}

// bpfBytes is prog as bwrap's --seccomp reads it: the raw array of struct
// sock_filter (u16 code, u8 jt, u8 jf, u32 k) in native byte order.
func bpfBytes(prog []unix.SockFilter) []byte {
	var buf bytes.Buffer
	buf.Grow(len(prog) * 8)
	_ = binary.Write(&buf, binary.NativeEndian, prog)
	return buf.Bytes()
}

// toolRules is the filter variant for a tool confined by s under m.
func (s *Spec) toolRules(m Mechanism) filterRules {
	r := filterRules{NetHost: !s.NetNone, UnixSockets: s.UnixSockets}
	if m == Landlock {
		uid := uint32(os.Geteuid())
		if s.RunAs != nil {
			uid = s.RunAs.UID
		}
		r.NoOwnerOps = uid == 0
		r.HostNamespaces = true
	}
	return r
}

// filterBytes is the compiled filter of a tool confined by s under m, as
// bpfBytes lays it out (what bwrap's --seccomp reads and what the landlock
// helper receives in its spec, so that it need not compile it again).
func (s *Spec) filterBytes(m Mechanism) ([]byte, error) {
	rules := s.toolRules(m)
	if b, ok := filterBytesCache.Load(rules); ok {
		return b.([]byte), nil
	}
	prog, err := program(rules, false)
	if err != nil {
		return nil, err
	}
	b := bpfBytes(prog)
	filterBytesCache.Store(rules, b)
	return b, nil
}

// filterBytesCache holds filterBytes' answer per variant (filterRules →
// []byte, never modified): a server starts many tools of few variants.
var filterBytesCache sync.Map

// bwrapSeccompPipe returns the read end of a pipe delivering the tool's
// compiled filter, for bwrap's --seccomp (bwrap loads it just before it
// execs the tool, after no_new_privs).
func bwrapSeccompPipe(s *Spec) (*os.File, error) {
	b, err := s.filterBytes(Bwrap)
	if err != nil {
		return nil, err
	}
	r, err := helper.FeedPipe(b)
	if err != nil {
		return nil, fmt.Errorf("passing the seccomp filter: %w", err)
	}
	return r, nil
}

// bwrapScopeRefusal refuses a bwrap tool that needs Landlock's abstract
// socket scope (see PrepareForkThread) on a kernel without it.
func bwrapScopeRefusal(s *Spec) *RefusalError {
	if !bwrapNeedsScope(s) || helper.LandlockABI() >= helper.RequiredLandlockABI {
		return nil
	}
	return refuse(FieldNet, Bwrap, `declare net = "none", or use a kernel with landlock ABI 6 (Linux 6.12+)`,
		"with net: host a plugin shares the host's abstract unix sockets, and this kernel has no landlock scope (ABI %d) to keep it from them", helper.LandlockABI())
}
