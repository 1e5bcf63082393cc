package sandbox

// LimitEnforcement says how this machine enforces one limit of the
// toolbox file's limits block (toolbox check --probe).
type LimitEnforcement struct {
	// Limit is the attribute's name in the limits block, e.g. "memory".
	Limit string `json:"limit"`
	// Enforced: every tool that sets the limit gets it here. processes is
	// false without a delegated cgroup: it then holds only for bwrap tools
	// that do not run as root, and other tools setting it are refused.
	Enforced bool `json:"enforced"`
	// How says by what, per process or per call.
	How string `json:"how"`
	// Missing says what this machine lacks, and why ("" when nothing).
	Missing string `json:"missing,omitempty"`
}

// LimitEnforcement lists, for every limit, how s enforces it.
func (s Support) LimitEnforcement() []LimitEnforcement {
	cg := s.Cgroup
	mem := LimitEnforcement{Limit: "memory", Enforced: true, How: "RLIMIT_DATA per process, every mechanism"}
	if cg.Memory {
		mem.How += "; memory.max per call (cgroup under " + cg.Dir + ")"
	} else {
		mem.Missing = "no cgroup memory.max per call: " + orUnknown(cg.MemoryReason)
	}
	procs := LimitEnforcement{Limit: "processes", Enforced: cg.Pids}
	if cg.Pids {
		procs.How = "pids.max per call (cgroup under " + cg.Dir + "), every mechanism"
	} else {
		procs.How = "RLIMIT_NPROC under bwrap for a tool not run as root (its own user namespace); refused for other tools"
		procs.Missing = "no cgroup pids.max: " + orUnknown(cg.PidsReason)
	}
	// The shared tmp is bounded where toolbox may mount (DESIGN.md §6, D6):
	// say which this machine is, not both.
	shared := "here the toolbox-wide tmp_size sizes the tmpfs toolbox mounts on the toolbox's shared tmp (root with CAP_SYS_ADMIN)"
	if !s.SharedTmpMount {
		shared = "here the toolbox's shared tmp is a plain directory, bounded per file only (only root with CAP_SYS_ADMIN can mount its tmpfs)"
	}
	tmp := LimitEnforcement{Limit: "tmp_size", Enforced: s.Bwrap, How: "size of every tmpfs bwrap mounts (/, a private /tmp, /dev/shm); " + shared}
	if !s.Bwrap {
		tmp.Missing = "bwrap is not usable: " + orUnknown(s.BwrapReason)
	}
	return []LimitEnforcement{
		mem,
		{Limit: "file_size", Enforced: true, How: "RLIMIT_FSIZE per file written, every mechanism"},
		{Limit: "open_files", Enforced: true, How: "RLIMIT_NOFILE per process, every mechanism"},
		{Limit: "cpu_seconds", Enforced: true, How: "RLIMIT_CPU per process (SIGXCPU, then SIGKILL a second later), every mechanism"},
		procs,
		tmp,
	}
}
