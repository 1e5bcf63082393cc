package sandbox

import (
	"errors"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

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
type Identity = helper.Identity

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
	// only, landlock refuses. When false the tool gets SharedTmp (tmp:
	// shared). The host's /tmp is never given to a tool (decision D1).
	TmpPrivate bool
	// SharedTmp is the toolbox's shared scratch directory (SharedTmpDir),
	// used when TmpPrivate is false: mounted read-write at /tmp under
	// bwrap; granted read-write at its own path under landlock, where the
	// tool finds it in $TMPDIR (the sandbox sets TMPDIR under both). It is
	// checked (owner, mode, no symlink) at every start and refused
	// otherwise (FieldTmp). "" gives a bwrap tool a fresh empty /tmp and a
	// landlock tool no scratch directory at all.
	SharedTmp string
	// SharedTmpSize is the size in bytes of the tmpfs SharedTmpDir mounted
	// on SharedTmp (what it returned as mounted), 0 when SharedTmp is a
	// plain directory. When set, Start refuses (FieldTmp) a SharedTmp that
	// is not the root of a tmpfs of exactly that size (rounded up to
	// pages): someone unmounted or resized it.
	SharedTmpSize uint64
	// Resolved maps declared paths (Read, Write, cleaned) to what they
	// resolved to when the tool was locked. Such a path is not resolved
	// again: its lock-time target is opened without following any symlink,
	// so a link planted after the lock is refused instead of followed.
	// Paths it lacks are resolved at start.
	Resolved map[string]string
	// Protected are host paths (files or directories) that a later run
	// trusts and no tool may change, replace, rename, link or delete
	// (decision D2): the toolbox file, the lock, the envdir root, every
	// locked binary, bubblewrap; toolbox's own executable is always added.
	// Under bwrap a protected path inside a writable grant is mounted
	// read-only on top of it (its parent directories pinned as mount
	// points, so they cannot be renamed away); landlock cannot mask, so
	// it refuses such a grant. A writable grant equal to or inside a
	// protected path is refused by both. Missing paths are skipped.
	Protected []string
	// Hidden are host directories no tool may reach at all (the state dir
	// in use: records, logs, the daemon's socket). Under bwrap one inside
	// any grant is covered by an empty read-only tmpfs; landlock refuses
	// a grant covering one; both refuse a grant inside one.
	Hidden []string
	// Bwrap is the pinned bubblewrap (see BwrapPin), required under Bwrap.
	Bwrap *BwrapPin
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
	// the tool can name is not confined (DESIGN.md §6): landlock refuses
	// it for a tool running as host uid 0, which would pass the peer check
	// of toolbox's own daemon socket (use bwrap, or a run_as user).
	UnixSockets bool
	// Limits bound the child's resources under every mechanism (see
	// Limits for how; the zero value limits nothing). A limit the machine
	// cannot enforce for this child is refused (LimitsRefusal).
	Limits Limits
	// Block, when set, is the toolbox file's block whose own sandbox block
	// declares this spec, as the operator wrote it (`builtin "process"`,
	// `mcp_server "name"`): a refusal then names that block and its field
	// as written there (sandbox.fs.write, not the describe document's
	// runtime.sandbox.fs.write). Empty for a tool, whose declarations
	// come from its describe document (runtime.*).
	Block string
}

// AsDeclared returns err with the *RefusalError it wraps (if any) naming
// the field as the spec's declarations were written: for a spec with a
// Block, that block and the field without "runtime." (see Spec.Block).
// Every refusal of Cmd, Start, Check and MakeRundir already went through
// it; callers that refuse a spec themselves (runspec) use it too.
func (s *Spec) AsDeclared(err error) error {
	var r *RefusalError
	if s == nil || s.Block == "" || !errors.As(err, &r) || r.Block != "" {
		return err
	}
	r.Block, r.Field = s.Block, strings.TrimPrefix(r.Field, "runtime.")
	return err
}

// ForPlugin is s as a go-plugin plugin runs under it, socketDir being the
// directory go-plugin made for the plugin's handshake socket: under bwrap
// and landlock that directory is added to the writable paths and the
// plugin may create unix sockets (UnixSockets). Under None (or a nil s)
// the spec is returned as it is. s itself is not changed. The directory
// is made by go-plugin for one start (mode 0700, a random name), so
// nothing a later run trusts is in it.
func (s *Spec) ForPlugin(socketDir string) *Spec {
	if s == nil || s.Mechanism == "" || s.Mechanism == None {
		return s
	}
	c := *s
	c.Write = append(slices.Clone(s.Write), socketDir)
	c.UnixSockets = true
	return &c
}

// orNone is spec (the zero Spec for nil) and its mechanism, None for "".
func orNone(spec *Spec) (*Spec, Mechanism) {
	if spec == nil {
		spec = &Spec{}
	}
	if spec.Mechanism == "" {
		return spec, None
	}
	return spec, spec.Mechanism
}
