package sandbox

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// Limits are the resource limits of one tool (DESIGN.md §6, "Limits"). A
// zero field leaves that resource unlimited; the zero value limits
// nothing and starts the tool exactly as before limits existed. How each
// field is enforced:
//
//   - Memory (bytes): RLIMIT_DATA on every process of the tool (private
//     writable memory: heap, anonymous mappings, thread stacks; address
//     space merely reserved, as Go, the JVM and V8 do, is not counted), and
//     memory.max on the call's cgroup where cgroup v2 is delegated (the
//     whole tree, tmpfs pages included; no swap beyond it).
//   - FileSize (bytes): RLIMIT_FSIZE, the largest file any process of the
//     tool can write. A write past it fails with EFBIG for a process that
//     ignores SIGXFSZ; any other process is killed by that signal.
//   - OpenFiles: RLIMIT_NOFILE (soft and hard), per process. At least
//     MinOpenFiles: bubblewrap itself needs descriptors before the tool
//     starts.
//   - CPUSeconds: RLIMIT_CPU, per process: SIGXCPU at the limit, SIGKILL
//     one second later.
//   - Processes: the tasks (processes and threads) of the tool's tree:
//     pids.max on the call's cgroup, or, without one, RLIMIT_NPROC under
//     bwrap for a tool that is not uid 0 (its own user namespace makes the
//     count the sandbox's alone). Elsewhere it cannot be honoured: Start
//     refuses (see LimitsRefusal). RLIMIT_NPROC is never used for uid 0
//     (the kernel exempts it) nor outside a user namespace (it would count
//     every process of the user on the host).
//   - TmpSize (bytes): the size of every tmpfs bwrap mounts for the tool
//     (the root, a private /tmp, /dev/shm). Landlock and none mount none:
//     their /tmp is a directory on disk, bounded per file by FileSize.
//
// Whenever Limits is not zero, core dumps are off (RLIMIT_CORE 0: the
// host's handler would write them outside every limit) and the tool can
// raise no hard limit: bwrap and landlock tools hold no capability, and
// under none CAP_SYS_RESOURCE is dropped before the tool starts. Hard
// limits equal soft ones (CPU aside), so a tool may lower, never raise.
type Limits struct {
	Memory     uint64
	FileSize   uint64
	OpenFiles  uint64
	CPUSeconds uint64
	Processes  uint64
	TmpSize    uint64
}

// MinOpenFiles is the least OpenFiles the sandbox accepts: bubblewrap
// opens descriptors while it builds the sandbox, after the limit is set.
const MinOpenFiles = helper.MinOpenFiles

// MinMemory is the least Memory the sandbox accepts: a Go program's
// runtime maps 32 MiB of bookkeeping at start (measured with Go 1.26), and
// toolbox's own helpers are Go programs that run under the limit briefly.
const MinMemory = 64 << 20

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// String renders the set fields, e.g. "memory=512MiB processes=64", or
// "none".
func (l Limits) String() string {
	var parts []string
	add := func(name string, v uint64, size bool) {
		if v == 0 {
			return
		}
		if size {
			parts = append(parts, name+"="+FormatSize(v))
		} else {
			parts = append(parts, fmt.Sprintf("%s=%d", name, v))
		}
	}
	add("memory", l.Memory, true)
	add("file_size", l.FileSize, true)
	add("open_files", l.OpenFiles, false)
	add("cpu_seconds", l.CPUSeconds, false)
	add("processes", l.Processes, false)
	add("tmp_size", l.TmpSize, true)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// FormatSize renders bytes in the largest IEC unit that divides them
// exactly ("512MiB", "1GiB", "1000"), the form the toolbox file accepts.
func FormatSize(n uint64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d", n)
}

// Field names of limits in refusals, as written in the toolbox file.
const (
	FieldLimitProcesses = "limits.processes"
	FieldLimitOpenFiles = "limits.open_files"
	FieldLimitMemory    = "limits.memory"
)

// rlimits lists the resource limits for l when the tool runs as uid under
// m; cgroupPids says the call's cgroup takes care of Processes.
func (l Limits) rlimits(m Mechanism, uid uint32, cgroupPids bool) []rlimit {
	if l.IsZero() {
		return nil
	}
	out := []rlimit{{Resource: unix.RLIMIT_CORE}}
	set := func(res int, v uint64) {
		if v > 0 {
			out = append(out, rlimit{Resource: res, Cur: v, Max: v})
		}
	}
	set(unix.RLIMIT_DATA, l.Memory)
	set(unix.RLIMIT_FSIZE, l.FileSize)
	set(unix.RLIMIT_NOFILE, l.OpenFiles)
	if l.CPUSeconds > 0 {
		out = append(out, rlimit{Resource: unix.RLIMIT_CPU, Cur: l.CPUSeconds, Max: l.CPUSeconds + 1})
	}
	if l.Processes > 0 && !cgroupPids && nprocCountsSandbox(m, uid) {
		// The sandbox's pid 1 (bwrap's init) is counted too.
		set(unix.RLIMIT_NPROC, l.Processes+1)
	}
	return out
}

// nprocCountsSandbox says whether RLIMIT_NPROC counts the tool's tasks
// alone: under bwrap (a user namespace of its own, where the kernel counts
// per namespace since Linux 5.14) for a uid other than 0 (which the kernel
// never holds to RLIMIT_NPROC).
func nprocCountsSandbox(m Mechanism, uid uint32) bool { return m == Bwrap && uid != 0 }

// toolUID is the host uid the tool runs as.
func toolUID(s *Spec) uint32 {
	if s.RunAs != nil {
		return s.RunAs.UID
	}
	return uint32(os.Geteuid())
}

// LimitsRefusal says whether l can be honoured for a tool running as uid
// under m on a machine with the given cgroup support: nil when it can,
// else a *RefusalError naming the limit. Only Processes can be refused
// (every other limit is an rlimit or a tmpfs size, which every mechanism
// applies); OpenFiles below MinOpenFiles and Memory below MinMemory are
// refused as mistakes.
func LimitsRefusal(l Limits, m Mechanism, uid uint32, cg CgroupSupport) *RefusalError {
	if l.OpenFiles > 0 && l.OpenFiles < MinOpenFiles {
		return refuse(FieldLimitOpenFiles, m, fmt.Sprintf("set open_files to %d or more", MinOpenFiles),
			"open_files %d is below %d, which bubblewrap needs to start", l.OpenFiles, MinOpenFiles)
	}
	if l.Memory > 0 && l.Memory < MinMemory {
		return refuse(FieldLimitMemory, m, fmt.Sprintf("set memory to %s or more", FormatSize(MinMemory)),
			"memory %s is below %s, which a Go program (toolbox's helpers among them) needs to start", FormatSize(l.Memory), FormatSize(MinMemory))
	}
	if l.Processes > 0 && !cg.Pids && !nprocCountsSandbox(m, uid) {
		return refuse(FieldLimitProcesses, m,
			`run toolbox where cgroup v2 delegates the pids controller (see TOOLBOX_CGROUP in the README), give the tool a run_as user other than root under sandbox "bwrap", or remove processes from the limits block; then run toolbox lock`,
			"no cgroup v2 pids controller here (%s), and RLIMIT_NPROC %s", orUnknown(cg.PidsReason), nprocWhyNot(m, uid))
	}
	return nil
}

func nprocWhyNot(m Mechanism, uid uint32) string {
	if uid == 0 {
		return "does not apply to uid 0"
	}
	return fmt.Sprintf("would count every process of uid %d on the host under %s (only bwrap gives the tool a user namespace of its own)", uid, m)
}
