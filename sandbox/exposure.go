package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// Exposure is the effective confinement of one child: what Start would
// give it under a Spec, found by the code that builds the start (the
// grants and where bwrap mounts them, the masks of protected paths, the
// Landlock rules, the seccomp rule set, the limits plan), without
// starting anything (Explain). Its JSON form is part of `toolbox check
// --probe --json` (DESIGN.md §6, "Exposure report"): field names and the
// vocabulary of the string fields are stable.
type Exposure struct {
	// Mechanism is "none", "bwrap" or "landlock".
	Mechanism Mechanism `json:"mechanism"`
	// UID and GID are the host ids the tool runs as.
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
	// FS is "granted" (only Read, Write, System and the tmp are there)
	// or "host" (mechanism none: every file its uid may use).
	FS string `json:"fs"`
	// Read and Write are the granted paths besides the system ones and
	// the tmp: the tool's own directory and the declared paths (a
	// plugin's socket directory among the writable ones). Empty under
	// none.
	Read  []PathExposure `json:"read"`
	Write []PathExposure `json:"write"`
	// System are the host paths (symlinks resolved) granted read-only to
	// every sandboxed tool: program and library directories, part of
	// /etc; under landlock also the devices it may use. Empty under none.
	System []string `json:"system"`
	// Net is "none" (no socket of any inet family: bwrap only) or "host".
	Net string `json:"net"`
	// UnixSockets says which unix sockets the tool can connect to:
	// "none" (socket(AF_UNIX) refused by the filter; connected pairs from
	// socketpair only), "granted" (socket files inside its mounts: bwrap),
	// "any-path" (any socket path it can name: landlock, whose abstract
	// names are scoped) or "host" (none: every path and abstract name).
	UnixSockets string `json:"unix_sockets"`
	// Tmp is the tool's /tmp (TMPDIR).
	Tmp TmpExposure `json:"tmp"`
	// Proc is "own" (a pid namespace's /proc: bwrap), "none" (no /proc:
	// landlock) or "host".
	Proc string `json:"proc"`
	// IPC is "own" (an IPC namespace of its own) or "host" (the System V
	// and POSIX IPC objects its uid may open).
	IPC string `json:"ipc"`
	// Signals is "own" (only its own processes: bwrap's pid namespace,
	// Landlock's signal scope) or "uid" (every process of its uid).
	Signals string `json:"signals"`
	// Seccomp names the seccomp rule set the tool gets, "" when none is
	// loaded: "tty" (unsandboxed children of a root toolbox: TIOCSTI and
	// TIOCLINUX refused), or "tool" followed by "+net" (inet, inet6 and
	// netlink route sockets allowed), "+unix" (AF_UNIX sockets allowed)
	// and "+no-owner-ops" (chmod, chown, utime and xattr families
	// refused), each when it applies (DESIGN.md §6, "Kernel rules").
	Seccomp string `json:"seccomp"`
	// Protected says, for every path a later run trusts (Spec.Protected,
	// Spec.Hidden, toolbox's own executable) that exists, how it is kept
	// out of the tool's reach.
	Protected []ProtectedExposure `json:"protected"`
	// Limits are the tool's limits, each with how this machine enforces
	// it for this tool.
	Limits []LimitExposure `json:"limits"`
	// Verdict sums it up.
	Verdict Verdict `json:"verdict"`
}

// PathExposure is one granted path.
type PathExposure struct {
	// Path is the host path, symlinks resolved: what is reached.
	Path string `json:"path"`
	// Inside is where the tool finds it (bwrap mounts a path where it
	// was declared; under landlock it is Path).
	Inside string `json:"inside"`
}

// TmpExposure is the tool's scratch directory.
type TmpExposure struct {
	// Kind is "private" (a fresh tmpfs of its own at /tmp: bwrap),
	// "shared" (the toolbox's shared scratch directory, SharedTmpDir),
	// "none" (landlock without one) or "host" (mechanism none: the host's
	// /tmp).
	Kind string `json:"kind"`
	// Path is the shared directory's host path (kind shared).
	Path string `json:"path,omitempty"`
	// Inside is where the tool finds it ($TMPDIR): /tmp, or the shared
	// directory's own path.
	Inside string `json:"inside,omitempty"`
	// Size bounds a private tmpfs, in bytes (0: half of the RAM, bwrap's
	// default), or, kind shared, the tmpfs toolbox mounted on the shared
	// directory (the toolbox-wide tmp_size, shared by all the toolbox's
	// tools; 0: a plain directory on the host's disk, not bounded).
	Size uint64 `json:"size,omitempty"`
}

// How protected paths are kept from a tool (ProtectedExposure.How).
const (
	ProtectedMasked     = "masked-read-only" // bwrap re-binds it read-only over a writable grant
	ProtectedHidden     = "masked-hidden"    // bwrap covers it with an empty read-only tmpfs
	ProtectedReadOnly   = "read-only"        // visible through a read-only grant or system path only
	ProtectedOutOfReach = "out-of-reach"     // inside no grant at all
	ProtectedUnguarded  = "unprotected"      // mechanism none: only the uid's permissions stand in the way
)

// ProtectedExposure is one protected path and how it is kept out of
// reach. Under landlock, which cannot mask, a grant that would let the
// tool write one (or reach a hidden one) is refused: Explain returns
// that refusal instead of an Exposure.
type ProtectedExposure struct {
	Path string `json:"path"`
	// Hidden: the state dir in use (Spec.Hidden), not to be reached at
	// all.
	Hidden bool `json:"hidden,omitempty"`
	// How is one of the Protected* constants.
	How string `json:"how"`
	// Inside is where the tool sees it (masked or read-only).
	Inside string `json:"inside,omitempty"`
	// Mask is the read-only mount that guards it under bwrap: Inside
	// itself, or for a protected file in a writable path its directory
	// (a mount on a file is dropped when the host renames over it).
	Mask string `json:"mask,omitempty"`
}

// LimitExposure is one limit of a tool and how this machine enforces it.
type LimitExposure struct {
	// Limit is the attribute of the limits block, e.g. "memory".
	Limit string `json:"limit"`
	// Value is the limit as the toolbox file writes it ("4GiB", "4096"),
	// or "unlimited".
	Value string `json:"value"`
	// Enforced: the tool gets it here. False for "unlimited", and for
	// tmp_size outside bwrap (no tmpfs to size).
	Enforced bool `json:"enforced"`
	// How names what enforces it ("RLIMIT_DATA, cgroup memory.max"), or
	// why nothing does.
	How string `json:"how"`
}

// Verdict levels, from best to worst (DESIGN.md §6, "Exposure report").
const (
	// LevelConfined: sandboxed, no network, writes only inside the
	// toolbox's directory, the call's workspace and its tmp, nothing of
	// the rows below.
	LevelConfined = "confined"
	// LevelPartial: sandboxed, but it reaches something of the host
	// beyond the toolbox (a Reason of this level says what).
	LevelPartial = "partial"
	// LevelExposed: not sandboxed.
	LevelExposed = "exposed"
)

// Verdict is the exposure level of a tool with the reasons for it.
type Verdict struct {
	// Level is the worst level of Reasons, LevelConfined when there is
	// none.
	Level string `json:"level"`
	// Reasons, in the order of the Reason* constants.
	Reasons []Reason `json:"reasons"`
}

// Reason is one finding of a verdict. Those of level partial or exposed
// lower it; one of level confined (ReasonWritesWorkspace) says what a
// confined tool may change and leaves the level as it is.
type Reason struct {
	// ID is one of the Reason* constants.
	ID string `json:"id"`
	// Level is the level this finding alone gives.
	Level string `json:"level"`
	// Text says what the tool can do because of it.
	Text string `json:"text"`
}

// Reasons of a verdict (Reason.ID) and the level each gives.
const (
	ReasonUnconfined      = "unconfined"             // exposed: mechanism none (the text says when as root)
	ReasonNetHost         = "net-host"               // partial: the host's network
	ReasonWritesOutside   = "writes-outside-toolbox" // partial: a write grant outside the toolbox's directory and the workspace
	ReasonWritesWorkspace = "writes-workspace"       // confined: a write grant inside the call's workspace, the project the tool works on
	ReasonHostSockets     = "host-sockets"           // partial: landlock with unix sockets connects to any socket path
	ReasonOwnerOps        = "owner-ops"              // partial: landlock as a uid other than 0 keeps the owner operations outside its grants
	ReasonHostIPC         = "host-ipc"               // partial: landlock without root shares the host's IPC objects of its uid
)

// ExplainOptions tune Explain's verdict. The zero value is usable.
type ExplainOptions struct {
	// Home is the toolbox's directory (the lock's, absolute): a writable
	// grant outside it (the tmp aside) is ReasonWritesOutside. "" checks
	// nothing.
	Home string
	// Scratch are writable paths made for one start that do not count
	// as outside (a plugin's socket directory).
	Scratch []string
	// Workspace is the call's workspace (absolute, symlinks resolved, as
	// runspec.Trust.Workspace; "" = none): a writable grant inside it is
	// not ReasonWritesOutside but ReasonWritesWorkspace, which keeps the
	// level confined: changing the project it works on is what such a
	// tool is for, and nothing above the workspace is reachable through it.
	Workspace string
}

// Explain reports the confinement a child started now as c under spec
// (nil = None) would get, found as Start finds it: the same refusals
// (the declaration the mechanism cannot honour, run_as without root, a
// limit this machine cannot enforce for it, a missing or swapped path, a
// grant over a protected path landlock cannot mask) come back as the same
// errors, and nothing is started. It opens the granted paths as a start
// does and closes them again; the shared tmp must exist (SharedTmpDir).
// c.Exe may be nil (c.Path is then checked as Start would without one).
func Explain(spec *Spec, c Command, opts ExplainOptions) (*Exposure, error) {
	x, err := explain(spec, c, opts)
	return x, spec.AsDeclared(err)
}

func explain(spec *Spec, c Command, opts ExplainOptions) (*Exposure, error) {
	s, m := orNone(spec)
	switch m {
	case None, Bwrap, Landlock:
	default:
		return nil, fmt.Errorf("sandbox mechanism %q cannot be explained (want none, bwrap or landlock)", m)
	}
	if _, err := credential(s.RunAs, m); err != nil {
		return nil, err
	}
	cg := DetectCgroup()
	if r := LimitsRefusal(s.Limits, m, toolUID(s), cg); r != nil {
		return nil, r
	}
	e := &Exposure{Mechanism: m, UID: toolUID(s), GID: toolGID(s), Read: []PathExposure{}, Write: []PathExposure{}, System: []string{}}
	var shared *sharedTmpBound
	if m != None && !s.TmpPrivate && s.SharedTmp != "" {
		shared = &sharedTmpBound{size: s.SharedTmpSize}
	}
	e.Limits = s.Limits.exposure(m, toolUID(s), cg, shared)
	switch m {
	case None:
		e.explainNone(s)
	case Bwrap:
		if r := bwrapScopeRefusal(s); r != nil {
			return nil, r
		}
		lay, err := bwrapPlan(s, c)
		if err != nil {
			return nil, err
		}
		defer closeGrants(lay.gs)
		e.explainBwrap(s, lay)
	case Landlock:
		if r := landlockDeclRefusal(s.NetNone, s.TmpPrivate); r != nil {
			return nil, r
		}
		if r := landlockSocketRefusal(s.UnixSockets, toolUID(s) == 0, s.RunAs != nil); r != nil {
			return nil, r
		}
		lay, err := landlockPlan(s, c)
		if err != nil {
			return nil, err
		}
		defer closeGrants(lay.gs)
		e.explainLandlock(s, lay)
	}
	e.Verdict = e.verdict(opts)
	return e, nil
}

// toolGID is the host gid the tool runs as.
func toolGID(s *Spec) uint32 {
	if s.RunAs != nil {
		return s.RunAs.GID
	}
	return uint32(os.Getegid())
}

func (e *Exposure) explainNone(s *Spec) {
	e.FS, e.Net, e.UnixSockets, e.Proc, e.IPC, e.Signals = "host", "host", "host", "host", "host", "uid"
	e.Tmp = TmpExposure{Kind: "host", Path: hostTmp(), Inside: "/tmp"}
	if helper.HasCapSysAdmin() { // what PrepareForkThread loads
		e.Seccomp = filterName(filterRules{}, true)
	}
	for _, p := range s.guardedPaths() {
		e.Protected = append(e.Protected, ProtectedExposure{Path: p.path, Hidden: p.hide, How: ProtectedUnguarded})
	}
}

func (e *Exposure) explainBwrap(s *Spec, lay *bwrapLayout) {
	e.FS, e.Proc, e.IPC, e.Signals = "granted", "own", "own", "own"
	e.Net = netName(s.NetNone)
	e.UnixSockets = "none"
	if s.UnixSockets {
		e.UnixSockets = "granted"
	}
	e.Seccomp = filterName(s.toolRules(Bwrap), false)
	e.addGrants(lay.gs)
	for _, x := range lay.sys {
		if x.link == "" {
			e.System = append(e.System, x.src)
		}
	}
	e.Tmp = TmpExposure{Kind: "private", Inside: "/tmp", Size: s.Limits.TmpSize}
	if lay.tmpAt != "" {
		e.Tmp = TmpExposure{Kind: "shared", Path: s.SharedTmp, Inside: lay.tmpAt, Size: s.SharedTmpSize}
	}
	for _, p := range lay.gp {
		pe := ProtectedExposure{Path: p.path, Hidden: p.hide, How: ProtectedOutOfReach}
		masked := false
		for _, m := range lay.masks {
			if m.kind != maskPin && within(p.path, m.src) {
				rel, _ := filepath.Rel(m.src, p.path)
				pe.Inside, pe.Mask, pe.How, masked = filepath.Join(m.inside, rel), m.inside, ProtectedMasked, true
				if m.kind == maskHidden {
					pe.How = ProtectedHidden
				}
				break
			}
		}
		if !masked {
			pe.How, pe.Inside = visibility(p, lay.gs, lay.sys)
		}
		e.Protected = append(e.Protected, pe)
	}
}

// visibility says how a guarded path no mask covers shows under bwrap:
// through the deepest grant holding it (read-only: bwrapMasks masks every
// guarded path a writable grant shows, so "writable" here would be its
// bug, said as it is) or a system entry, or not at all.
func visibility(p guarded, gs []grant, sys []sysEntry) (how, inside string) {
	best := -1
	for i, g := range gs {
		if within(p.path, g.src) && (best < 0 || len(g.src) > len(gs[best].src)) {
			best = i
		}
	}
	if best >= 0 {
		rel, _ := filepath.Rel(gs[best].src, p.path)
		if gs[best].write {
			return "writable", filepath.Join(gs[best].dest, rel)
		}
		return ProtectedReadOnly, filepath.Join(gs[best].dest, rel)
	}
	if _, inside, ok := resolvedInside(p.path, nil, sys); ok {
		return ProtectedReadOnly, inside
	}
	return ProtectedOutOfReach, ""
}

func (e *Exposure) explainLandlock(s *Spec, lay *landlockLayout) {
	e.FS, e.Net, e.Proc, e.Signals = "granted", "host", "none", "own"
	e.IPC = "host"
	if helper.HasCapSysAdmin() { // the helper unshares IPC (unshareIPC)
		e.IPC = "own"
	}
	e.UnixSockets = "none"
	if s.UnixSockets {
		e.UnixSockets = "any-path"
	}
	e.Seccomp = filterName(s.toolRules(Landlock), false)
	e.addGrants(lay.gs)
	for _, g := range lay.grants {
		if g.File == nil {
			e.System = append(e.System, g.Path)
		}
	}
	e.Tmp = TmpExposure{Kind: "none"}
	if lay.tmpdir != "" {
		e.Tmp = TmpExposure{Kind: "shared", Path: lay.tmpdir, Inside: lay.tmpdir, Size: s.SharedTmpSize}
	}
	for _, p := range lay.gp {
		pe := ProtectedExposure{Path: p.path, Hidden: p.hide, How: ProtectedOutOfReach}
		for _, g := range lay.grants {
			if within(p.path, g.Path) {
				pe.How, pe.Inside = ProtectedReadOnly, p.path
				if g.Write { // refused by landlockPlan: never here
					pe.How = "writable"
					break
				}
			}
		}
		e.Protected = append(e.Protected, pe)
	}
}

// addGrants lists the grants but the tmp (said in Tmp) as Read or Write.
func (e *Exposure) addGrants(gs []grant) {
	for _, g := range gs {
		if g.field == FieldTmp {
			continue
		}
		pe := PathExposure{Path: g.src, Inside: g.dest}
		if g.write {
			e.Write = append(e.Write, pe)
		} else {
			e.Read = append(e.Read, pe)
		}
	}
}

func netName(none bool) string {
	if none {
		return "none"
	}
	return "host"
}

// filterName names the seccomp rule set of rules (Exposure.Seccomp): "tty" for the filter of unsandboxed children (tty true), else
// "tool" followed by "+net" (inet, inet6, netlink route sockets), "+unix"
// (AF_UNIX sockets) and "+no-owner-ops" (chmod, chown, utime and xattr
// families refused), each when it applies. Every tool filter refuses
// setuid and setgid files, new user namespaces, io_uring, openat2,
// clone3, the kernel surface of the table and TIOCSTI/TIOCLINUX.
func filterName(r filterRules, tty bool) string {
	if tty {
		return "tty"
	}
	name := "tool"
	if r.NetHost {
		name += "+net"
	}
	if r.UnixSockets {
		name += "+unix"
	}
	if r.NoOwnerOps {
		name += "+no-owner-ops"
	}
	if r.HostNamespaces {
		name += "+host-ns"
	}
	return name
}

// sharedTmpBound is the toolbox's shared tmp a tool gets: size is the
// tmpfs mounted on it in bytes, 0 for a plain host directory.
type sharedTmpBound struct{ size uint64 }

// exposure lists the six limits of l for a tool running as uid under m,
// each with what enforces it on this machine: the rlimits Start sets
// (rlimits), the call's cgroup when one is made (CgroupSupport.needed),
// bwrap's tmpfs sizes, the tmpfs on the toolbox's shared tmp. shared is
// the shared tmp the tool gets (nil: none, tmp private or mechanism none).
func (l Limits) exposure(m Mechanism, uid uint32, cg CgroupSupport, shared *sharedTmpBound) []LimitExposure {
	rs := l.rlimits(m, uid, cg.Pids && cg.Dir != "")
	has := func(res int) bool {
		return slices.ContainsFunc(rs, func(r rlimit) bool { return r.Resource == res })
	}
	cgroup := cg.needed(l)
	one := func(name string, v uint64, size bool, hows ...string) LimitExposure {
		le := LimitExposure{Limit: name, Value: "unlimited", How: "not limited"}
		if v == 0 {
			return le
		}
		le.Value = fmt.Sprint(v)
		if size {
			le.Value = FormatSize(v)
		}
		var by []string
		for _, h := range hows {
			if h != "" {
				by = append(by, h)
			}
		}
		le.Enforced = len(by) > 0
		le.How = strings.Join(by, ", ")
		return le
	}
	if_ := func(ok bool, s string) string {
		if ok {
			return s
		}
		return ""
	}
	tmp := one("tmp_size", l.TmpSize, true, if_(m == Bwrap, "tmpfs size (/, a private /tmp, /dev/shm)"))
	own := "" // what bounds the tool's own mounts, before the shared tmp
	if m == Bwrap {
		own = "tmpfs size of / and /dev/shm; "
	}
	switch {
	case shared != nil && shared.size > 0:
		// DESIGN.md §6, D6: as root toolbox mounts a tmpfs of the
		// toolbox-wide tmp_size on the shared tmp.
		if m != Bwrap {
			tmp.Value = FormatSize(shared.size)
		}
		tmp.Enforced = true
		tmp.How = fmt.Sprintf("%sits tmp is the toolbox's shared tmp, a tmpfs of %s shared by the toolbox's tools (the toolbox-wide tmp_size)", own, FormatSize(shared.size))
	case shared != nil:
		// A plain host directory: what the tool writes there stays on
		// the host's disk, bounded per file only.
		why := fmt.Sprintf("only root can mount the tmpfs that bounds it, and toolbox runs as uid %d", os.Geteuid())
		if os.Geteuid() == 0 {
			why = "the toolbox-wide tmp_size is unlimited, or toolbox may not mount here (no CAP_SYS_ADMIN)"
		}
		tmp.Value, tmp.Enforced = FormatSize(l.TmpSize), false
		if l.TmpSize == 0 {
			tmp.Value = "unlimited"
		}
		tmp.How = fmt.Sprintf("%snot its tmp: the toolbox's shared directory on the host's disk, where file_size bounds each file, not their sum (%s; declare tmp: private under bwrap for a sized tmpfs)", own, why)
	case l.TmpSize > 0 && m != Bwrap:
		tmp.How = fmt.Sprintf("not applicable: %s mounts no tmpfs (file_size bounds each file of its tmp)", m)
	}
	memory := one("memory", l.Memory, true, if_(has(unix.RLIMIT_DATA), "RLIMIT_DATA"), if_(cgroup && cg.Memory, "cgroup memory.max"))
	if memory.Enforced && !(cgroup && cg.Memory) {
		// RLIMIT_DATA counts a process's private writable mappings: not
		// shared ones (memfd, MAP_SHARED, tmpfs pages), and each process
		// of the tool has its own.
		memory.How += " per process (shared memory, memfd and tmpfs pages are not counted; a cgroup's memory.max would count them)"
	}
	return []LimitExposure{
		memory,
		one("file_size", l.FileSize, true, if_(has(unix.RLIMIT_FSIZE), "RLIMIT_FSIZE")),
		one("open_files", l.OpenFiles, false, if_(has(unix.RLIMIT_NOFILE), "RLIMIT_NOFILE")),
		one("cpu_seconds", l.CPUSeconds, false, if_(has(unix.RLIMIT_CPU), "RLIMIT_CPU")),
		one("processes", l.Processes, false, if_(has(unix.RLIMIT_NPROC), "RLIMIT_NPROC in its user namespace"), if_(cgroup && cg.Pids, "cgroup pids.max")),
		tmp,
	}
}

// verdict grades e (the scale of the Level* and Reason* constants).
func (e *Exposure) verdict(opts ExplainOptions) Verdict {
	v := Verdict{Level: LevelConfined, Reasons: []Reason{}}
	add := func(id, level, format string, args ...any) {
		v.Reasons = append(v.Reasons, Reason{ID: id, Level: level, Text: fmt.Sprintf(format, args...)})
		if rank(level) > rank(v.Level) {
			v.Level = level
		}
	}
	if e.Mechanism == None {
		if e.UID == 0 {
			add(ReasonUnconfined, LevelExposed, "runs unconfined as root (uid 0): it can read and change anything on the host")
		} else {
			add(ReasonUnconfined, LevelExposed, "runs unconfined as uid %d: it can read and change whatever that user may, and reach the network", e.UID)
		}
		return v
	}
	if e.Net == "host" {
		add(ReasonNetHost, LevelPartial, "net: host: it reaches the host's network")
	}
	var outside, workspace []string
	for _, w := range e.Write {
		switch {
		case opts.Home == "" || within(w.Path, opts.Home) || slices.ContainsFunc(opts.Scratch, func(s string) bool { return within(w.Path, s) }):
		case opts.Workspace != "" && within(w.Path, opts.Workspace):
			workspace = append(workspace, w.Path)
		default:
			outside = append(outside, w.Path)
		}
	}
	if len(outside) > 0 {
		if opts.Workspace != "" {
			add(ReasonWritesOutside, LevelPartial, "it writes outside the toolbox's directory %s and the workspace %s: %s", opts.Home, opts.Workspace, strings.Join(outside, ", "))
		} else {
			add(ReasonWritesOutside, LevelPartial, "it writes outside the toolbox's directory %s: %s", opts.Home, strings.Join(outside, ", "))
		}
	}
	if len(workspace) > 0 {
		text := fmt.Sprintf("it writes the workspace %s (the project it works on; nothing above it)", opts.Workspace)
		if len(workspace) > 1 || workspace[0] != opts.Workspace {
			text += ": " + strings.Join(workspace, ", ")
		}
		add(ReasonWritesWorkspace, LevelConfined, "%s", text)
	}
	if e.UnixSockets == "any-path" {
		add(ReasonHostSockets, LevelPartial, "it can connect to any unix socket path it can name (landlock has no rule for it)")
	}
	if e.Mechanism == Landlock && e.UID != 0 {
		add(ReasonOwnerOps, LevelPartial, "it can chmod, chown, touch and tag files that uid %d owns outside its grants (landlock has no rule for them)", e.UID)
	}
	if e.IPC == "host" {
		add(ReasonHostIPC, LevelPartial, "it shares the host's System V and POSIX IPC objects of uid %d (no IPC namespace without root)", e.UID)
	}
	return v
}

func rank(level string) int {
	switch level {
	case LevelExposed:
		return 2
	case LevelPartial:
		return 1
	}
	return 0
}
