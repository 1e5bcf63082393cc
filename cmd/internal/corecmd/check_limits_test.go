package corecmd

import (
	"bytes"
	"testing"
	"text/tabwriter"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// The text form of check --probe's limits section: one line per limit,
// yes or no, how, and what is missing here.
func TestPrintLimits(t *testing.T) {
	s := sandbox.Support{Bwrap: true, Cgroup: sandbox.CgroupSupport{MemoryReason: "no v2", PidsReason: "no v2"}, SharedTmpMount: true}
	var out bytes.Buffer
	w := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	printLimits(w, s.LimitEnforcement())
	w.Flush()
	want := `limits enforced on this machine:
  memory       yes  RLIMIT_DATA per process, every mechanism (no cgroup memory.max per call: no v2)
  file_size    yes  RLIMIT_FSIZE per file written, every mechanism
  open_files   yes  RLIMIT_NOFILE per process, every mechanism
  cpu_seconds  yes  RLIMIT_CPU per process (SIGXCPU, then SIGKILL a second later), every mechanism
  processes    no   RLIMIT_NPROC under bwrap for a tool not run as root (its own user namespace); refused for other tools (no cgroup pids.max: no v2)
  tmp_size     yes  size of every tmpfs bwrap mounts (/, a private /tmp, /dev/shm); here the toolbox-wide tmp_size sizes the tmpfs toolbox mounts on the toolbox's shared tmp (root with CAP_SYS_ADMIN)
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// Where toolbox may not mount, the tmp_size line says the shared tmp is a
// plain directory here, bounded per file only.
func TestPrintLimitsSharedTmpUnbounded(t *testing.T) {
	s := sandbox.Support{Bwrap: true}
	var out bytes.Buffer
	w := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	printLimits(w, s.LimitEnforcement())
	w.Flush()
	want := "here the toolbox's shared tmp is a plain directory, bounded per file only (only root with CAP_SYS_ADMIN can mount its tmpfs)"
	if !bytes.Contains(out.Bytes(), []byte(want)) {
		t.Fatalf("got:\n%s\nwant a tmp_size line saying %q", out.String(), want)
	}
}
