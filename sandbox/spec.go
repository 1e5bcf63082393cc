package sandbox

// Mechanism names how a tool is confined (DESIGN.md §6).
type Mechanism string

// Mechanisms. Auto is only a request: Resolve turns it into Bwrap or
// Landlock per tool, or refuses the tool.
const (
	None     Mechanism = "none"
	Bwrap    Mechanism = "bwrap"
	Landlock Mechanism = "landlock"
	Auto     Mechanism = "auto"
)

// Identity is a resolved run_as: real uid, gid and supplementary groups.
type Identity struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// Spec is everything the launcher and the prober need to confine one child.
// The zero value (Mechanism "") means None: no confinement, the child only
// gets the hygiene every child gets (own session and process group, no fd
// above 2 inherited, stdin a pipe).
type Spec struct {
	Mechanism Mechanism
	// ToolDir is the tool's own directory (absolute); always readable.
	ToolDir string
	// Read and Write are absolute paths the tool may read, or read and write.
	Read  []string
	Write []string
	// NetNone cuts the network (net: none).
	NetNone bool
	// TmpPrivate gives the tool its own /tmp (tmp: private).
	TmpPrivate bool
	// RunAs, when non-nil, is the identity the child runs as.
	RunAs *Identity
}
