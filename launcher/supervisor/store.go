package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// Record is a process as persisted in the state dir: one JSON file per
// process, <StateDir>/processes/<id>.json (mode 0600), rewritten
// atomically (temp file and rename) on every state change. It is what
// survives the supervisor. Its fields mean what Status's do; PGID is the
// process group (equal to PID: every process leads its own group), and
// PIDStart the start time of PID (clock ticks after boot, as /proc shows
// it), which lets a later supervisor find a lost process again without
// ever signalling a reused pid (sandbox.KillTree).
type Record struct {
	ID         string     `json:"id"`
	Session    string     `json:"session"`
	Kind       Kind       `json:"kind"`
	Tool       string     `json:"tool"`
	Capability string     `json:"capability,omitempty"`
	Name       string     `json:"name,omitempty"`
	Label      string     `json:"label,omitempty"`
	Command    string     `json:"command,omitempty"`
	PID        int        `json:"pid,omitempty"`
	PGID       int        `json:"pgid,omitempty"`
	PIDStart   uint64     `json:"pid_start,omitempty"`
	State      State      `json:"state"`
	Since      time.Time  `json:"since"`
	Restarts   int        `json:"restarts,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Started    time.Time  `json:"started"`
	Ended      *time.Time `json:"ended,omitempty"`
	Logs       *LogFiles  `json:"logs,omitempty"`
	Runtime    *Runtime   `json:"runtime,omitempty"`
	// Output is how much output the process had written when the record
	// was last written (at most outputFlush before its supervisor died):
	// what a later supervisor says was lost with the dead one's memory.
	Output *RecordedOutput `json:"output,omitempty"`
	// Owner is the supervisor that runs (or ran) the process.
	Owner Owner `json:"supervisor"`
}

// RecordedOutput is how much output a process had written by At: Head is
// the output ring's head cursor (every byte taken in, both streams), and
// Stdout and Stderr the bytes of each stream.
type RecordedOutput struct {
	Head   int64     `json:"head"`
	Stdout int64     `json:"stdout_bytes"`
	Stderr int64     `json:"stderr_bytes"`
	At     time.Time `json:"at"`
}

// Owner identifies a supervisor: a random instance id, and its process
// (pid and the start time /proc reports for it, which tells a pid reused
// by another process apart).
type Owner struct {
	Instance  string `json:"instance"`
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
}

// Alive reports whether the owner's process still runs: its pid exists,
// is no zombie, and started at the recorded time.
func (o Owner) Alive() bool {
	if o.PID <= 0 {
		return false
	}
	st, state, err := procStartTime(o.PID)
	return err == nil && state != 'Z' && state != 'X' && st == o.StartTime
}

const recordsDir = "processes"

// maxRecordBytes bounds a record file read: a record of a command line
// of a few kilobytes is padded to 8 KiB; anything much larger is not one.
const maxRecordBytes = 1 << 20

// ReadRecords reads every process record of stateDir, sorted by start
// time. A missing directory is no records. Files that are not valid
// records are skipped and reported in the joined error, with the records
// that could be read.
func ReadRecords(stateDir string) ([]Record, error) {
	dir := filepath.Join(stateDir, recordsDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading process records: %w", err)
	}
	var recs []Record
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		data, err := inputfile.ReadFile(filepath.Join(dir, name), maxRecordBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading process record %q: %w", name, err))
			continue
		}
		var r Record
		if err := json.Unmarshal(data, &r); err != nil || r.ID+".json" != name || r.Session == "" {
			if err == nil {
				err = errors.New("id or session missing or not matching the file name")
			}
			errs = append(errs, fmt.Errorf("reading process record %q: %w", name, err))
			continue
		}
		recs = append(recs, r)
	}
	sortRecords(recs)
	return recs, errors.Join(errs...)
}

func sortRecords(recs []Record) {
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && recs[j].Started.Before(recs[j-1].Started); j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

// recordBlock is the unit a record file is padded to: a record is
// written in whole blocks of white space after its JSON, at least
// recordSlack bytes more than it needs, so that a later state of the
// process fits in the blocks the file already holds.
const (
	recordBlock = 4096
	recordSlack = 1024
)

// writeRecord writes r (mode 0600): atomically (a temporary file renamed
// over the record), else, when that fails (a full disk cannot give the
// new file its blocks), in place, over the blocks of the record already
// there, when the new state fits in them. It returns an error only when
// both fail: the record on disk is then the previous one, or none.
func writeRecord(stateDir string, r Record) error {
	dir := filepath.Join(stateDir, recordsDir)
	path := filepath.Join(dir, r.ID+".json")
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("writing process record %q: %w", r.ID, err)
	}
	data = append(data, '\n')
	err = writeRecordAtomic(dir, path, r.ID, padded(data, 0))
	if err == nil {
		return nil
	}
	if ierr := overwriteRecord(path, data); ierr != nil {
		return fmt.Errorf("writing process record %q: %w (in place: %v)", r.ID, err, ierr)
	}
	return nil
}

// padded returns data followed by spaces and a newline up to a whole
// number of recordBlocks, at least size bytes and recordSlack more than
// data. JSON readers skip the white space.
func padded(data []byte, size int) []byte {
	n := max(size, (len(data)+recordSlack+recordBlock-1)/recordBlock*recordBlock)
	out := make([]byte, n)
	copy(out, data)
	for i := len(data); i < n-1; i++ {
		out[i] = ' '
	}
	out[n-1] = '\n'
	return out
}

// staleTempAge is how old a record's temporary file must be before a
// starting supervisor removes it as the leftover of a crash: a write
// renames its file within milliseconds, so one this old has no writer
// (another live supervisor of the state dir may be writing a fresh one).
const staleTempAge = time.Minute

// removeStaleTemps removes the temporary files of record writes that a
// killed supervisor left in stateDir (half written, never renamed), once
// older than staleTempAge. Errors are ignored: they are leftovers.
func removeStaleTemps(stateDir string) {
	dir := filepath.Join(stateDir, recordsDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".tmp") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTempAge {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

func writeRecordAtomic(dir, path, id string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+id+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// overwriteRecord writes data over the record file at path, padded to the
// file's size, without allocating: it refuses a record that does not fit.
// A crash can only tear it if the machine stops during the one write.
func overwriteRecord(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if int64(len(data)) >= info.Size() {
		return fmt.Errorf("the record (%d bytes) does not fit in the %d bytes of its file", len(data), info.Size())
	}
	if _, err := f.WriteAt(padded(data, int(info.Size()))[:info.Size()], 0); err != nil {
		return err
	}
	return f.Close()
}

func removeRecord(stateDir, id string) {
	os.Remove(filepath.Join(stateDir, recordsDir, id+".json"))
}

func recordExists(stateDir, id string) bool {
	_, err := os.Lstat(filepath.Join(stateDir, recordsDir, id+".json"))
	return err == nil
}

// procStartTime reads the start time (field 22, clock ticks after boot) and
// the state of pid from /proc/PID/stat. The command name may hold spaces
// and parentheses, so fields are counted from the last ')'.
func procStartTime(pid int) (uint64, byte, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("reading /proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(data[i+1:])
	// fields[0] is field 3 (state), so field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("reading /proc/%d/stat: too few fields", pid)
	}
	st, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("reading /proc/%d/stat: start time: %w", pid, err)
	}
	return st, fields[0][0], nil
}
