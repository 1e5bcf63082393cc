package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/protocol"
)

// tmpfsStateDir mounts a tmpfs of size bytes on a temporary directory for
// the test, unmounted at its end (after the supervisors made after it are
// closed).
func tmpfsStateDir(t *testing.T, size string) string {
	t.Helper()
	testenv.NeedRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		testenv.Unavailable(t, "mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
	return dir
}

// fillUp writes a file in dir until the file system is full.
func fillUp(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// recordStates reads the records on disk: what a supervisor started after
// a crash would find.
func recordStates(t *testing.T, dir string) map[string]State {
	t.Helper()
	recs, err := ReadRecords(dir)
	if err != nil {
		t.Fatalf("reading the records: %v", err)
	}
	out := map[string]State{}
	for _, r := range recs {
		out[r.ID] = r.State
	}
	return out
}

// TestDiskFullStartsAreRefusedAndRecordsKept: with the state dir full, a
// start and a background command are refused with an error before
// anything runs (their records could not be made: four processes once ran
// unrecorded and vanished), while the processes already running are
// stopped or finish with their final states written to disk (in place:
// one finished process once showed "lost" after a crash).
func TestDiskFullStartsAreRefusedAndRecordsKept(t *testing.T) {
	state := tmpfsStateDir(t, "256k")
	f := newFixture(t)
	f.AddTool(t, "svc", `echo ready; exec sleep 30`, describe("svc", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)}, nil))
	s := f.supervisor(t, func(c *Config) { c.StateDir = state })
	ctx := ctxT(t)
	svc, err := s.Start(ctx, "sess", "svc", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := s.RunCommand(ctx, "sess", Command{Cmd: "sleep 30", Name: "job", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(f.Dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	quick, err := s.RunCommand(ctx, "sess", Command{Cmd: "read _ < " + fifo + "; exit 3", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	fillUp(t, state)

	marker := filepath.Join(f.Dir, "ran")
	if _, err := s.RunCommand(ctx, "sess", Command{Cmd: "touch " + marker}); !errors.Is(err, ErrNoRecord) || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("RunCommand on a full disk = %v, want ErrNoRecord saying why", err)
	}
	if _, err := s.Start(ctx, "sess", "svc", nil, StartOptions{}); !errors.Is(err, ErrNoRecord) {
		t.Errorf("Start on a full disk = %v, want ErrNoRecord", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the refused command ran")
	}

	// Running processes end, and their final records still land.
	if st, err := s.Stop(ctx, "sess", job.Process, false); err != nil || st.Status != StateStopped {
		t.Errorf("Stop(job) on a full disk = %s, %v", st.Status, err)
	}
	if st, err := s.Stop(ctx, "sess", svc.Process, false); err != nil || st.Status != StateStopped {
		t.Errorf("Stop(svc) on a full disk = %s, %v", st.Status, err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // the command reads the end of the FIFO and exits 3
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Status says Done as soon as the state is final in memory; the final
	// record is written right after it (finish), so the disk is what is
	// waited for.
	testenv.Eventually(t, 10*time.Second, "the command's final record", func() bool {
		return recordStates(t, state)[quick.Process] == StateFailed
	})
	want := map[string]State{svc.Process: StateStopped, job.Process: StateStopped, quick.Process: StateFailed}
	got := recordStates(t, state)
	for id, st := range want {
		if got[id] != st {
			t.Errorf("record of %s on disk: %q, want %q", id, got[id], st)
		}
	}
	if len(got) != len(want) {
		t.Errorf("records on disk: %v, want exactly %v", got, want)
	}
}

// TestRecordErrorReachesTheCaller: when a record cannot be written even in
// place (a read-only state dir), Stop says so with a *RecordError, the
// status notes it, and the record lands once the state dir is writable
// again.
func TestRecordErrorReachesTheCaller(t *testing.T) {
	state := tmpfsStateDir(t, "1m")
	f := newFixture(t)
	// The host's slot files stay open for writing while processes live,
	// which would keep the state dir's tmpfs from being remounted
	// read-only: they live elsewhere here.
	slots := t.TempDir()
	s := f.supervisor(t, func(c *Config) { c.StateDir, c.SlotsDir = state, slots })
	ctx := ctxT(t)
	job, err := s.RunCommand(ctx, "sess", Command{Cmd: "sleep 30", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", state, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remounting read-only: %v", err)
	}
	st, err := s.Stop(ctx, "sess", job.Process, false)
	var re *RecordError
	if !errors.As(err, &re) || !errors.Is(err, ErrNoRecord) || re.State != StateStopped || st.Status != StateStopped {
		t.Fatalf("Stop on a read-only state dir = %s, %v; want stopped with a *RecordError", st.Status, err)
	}
	if st, _ := s.Status(ctx, "sess", job.Process, 0); len(st.Notes) == 0 || !strings.Contains(st.Notes[0], "its record could not be written") {
		t.Errorf("status notes %q, want the record's error", st.Notes)
	}
	if got := recordStates(t, state)[job.Process]; got != StateRunning {
		t.Fatalf("record on disk while read-only: %q", got)
	}
	if err := unix.Mount("", state, "", unix.MS_REMOUNT, ""); err != nil {
		t.Fatalf("remounting read-write: %v", err)
	}
	testenv.Eventually(t, 5*recordRetry, "the record to land once the disk is writable", func() bool {
		return recordStates(t, state)[job.Process] == StateStopped
	})
	if st, _ := s.Status(ctx, "sess", job.Process, 0); len(st.Notes) != 0 {
		t.Errorf("notes after the record landed: %q", st.Notes)
	}
}
