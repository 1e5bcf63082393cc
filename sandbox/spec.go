package sandbox

// Mechanism names how a tool is confined (DESIGN.md §6).
type Mechanism string

// Mechanisms. Auto is only a request: Resolve turns it into Bwrap or
// Landlock per tool, or refuses the tool; Cmd and Start refuse it.
const (
	None     Mechanism = "none"
	Bwrap    Mechanism = "bwrap"
	Landlock Mechanism = "landlock"
	Auto     Mechanism = "auto"
)

// Identity is a resolved run_as (see LookupIdentity): the real and
// effective uid and gid the child runs with, and its supplementary groups
// (which include GID). Switching to it needs root; an Identity equal to
// toolbox's own is honoured without switching.
type Identity struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// Spec is everything the launcher and the prober need to confine one child.
// The zero value (Mechanism "") means None: no confinement, the child only
// gets the hygiene every child gets (own session and process group, no fd
// above 2 inherited, stdin a pipe). Under None only RunAs applies.
//
// Under Bwrap and Landlock every path must be absolute and exist (a
// missing one is refused, naming its field). Paths are resolved on the
// host; a path reaching outside the granted paths through a symlink that
// lies inside a writable path is refused. Under bwrap the tool sees each
// path where it was declared, on an otherwise empty root holding only the
// system directories (/usr, /bin, /lib…, part of /etc), /dev and /proc.
type Spec struct {
	Mechanism Mechanism
	// ToolDir is the tool's own directory (absolute); always readable, the
	// default working directory of a sandboxed tool.
	ToolDir string
	// Read and Write are absolute paths the tool may read (and execute), or
	// also write. A path in both is writable. A read path inside a
	// writable one stays read-only under bwrap (it is mounted on top);
	// under landlock access is the union of the grants covering a path,
	// so it is writable too.
	Read  []string
	Write []string
	// NetNone cuts the network (net: none): bwrap only, landlock refuses.
	NetNone bool
	// TmpPrivate gives the tool its own empty /tmp (tmp: private): bwrap
	// only, landlock refuses. When false the host's /tmp is shared
	// read-write (tmp: shared).
	TmpPrivate bool
	// RunAs, when non-nil, is the identity the child runs as (under every
	// mechanism, None included).
	RunAs *Identity
	// UnixSockets lets a sandboxed tool create AF_UNIX sockets (socket(2);
	// connected pairs from socketpair(2) are always allowed). Plugins need
	// it: go-plugin's handshake listens on a socket in a granted
	// directory. Without it the seccomp filter refuses AF_UNIX under
	// every mechanism, because Landlock cannot confine a connect to a
	// socket path and net: host shares the host's abstract socket names.
	// With it, abstract names stay out of reach (Landlock's scope, under
	// both mechanisms), but under landlock a connect to any socket path
	// the tool can name is not confined (DESIGN.md §6).
	UnixSockets bool
	// Limits bound the child's resources under every mechanism (see
	// Limits for how; the zero value limits nothing). A limit the machine
	// cannot enforce for this child is refused (LimitsRefusal).
	Limits Limits
}
