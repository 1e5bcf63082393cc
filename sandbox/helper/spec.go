// Package helper is the process toolbox starts between itself and a tool
// that bwrap does not confine: the sandbox helper (the tool's reaper, and
// under landlock the process that restricts itself before it forks the
// tool) and the limits wrapper. Package sandbox starts both; they run from
// its initialisation in the toolbox binaries, or from cmd/toolbox-reaper,
// a small binary that links this package only (DESIGN.md §5).
//
// It links no cgo (no net, os/user or libcap's psx), so that a binary
// made of it alone is static and starts in about a millisecond: what a
// start of an unconfined tool pays on top of toolbox's own.
package helper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Arg is argv[1] of the sandbox helper.
const Arg = "__toolbox-sandbox-exec"

// LimitsArg is argv[1] of the limits wrapper.
const LimitsArg = "__toolbox-limits-exec"

// ExitSetupFailed is the helper's exit code when the tool never started
// (DESIGN.md §7: 125 = toolbox failed before launch).
const ExitSetupFailed = 125

// MinOpenFiles is the least RLIMIT_NOFILE the sandbox accepts (bubblewrap
// opens descriptors while it builds the sandbox, after the limit is set),
// and enough for the helper to hold the limit itself.
const MinOpenFiles = 64

// Identity is a resolved run_as: numeric uid, gid and supplementary
// groups.
type Identity struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// Spec is what the helper reads from fd 3, in its binary form
// (Spec.MarshalBinary; the json tags name the fields in errors and tests,
// and "-" marks the ones never sent): never argv or the environment,
// which other processes can read.
type Spec struct {
	// Plain starts the tool unconfined (mechanism none): the helper is
	// only its reaper.
	Plain     bool      `json:"plain,omitempty"`
	Path      string    `json:"path"`             // resolved executable
	ExeFD     int       `json:"exe_fd,omitempty"` // the checked executable's descriptor (0: none)
	Script    bool      `json:"script,omitempty"` // run by Path (its interpreter opens it again), after checking Path is ExeFD's file
	Argv      []string  `json:"argv"`             // argv[0] included
	Env       []string  `json:"env"`              // the tool's complete environment
	Dir       string    `json:"dir"`              // resolved working directory ("" when Plain: the helper's)
	Grants    []Grant   `json:"grants"`
	RunAs     *Identity `json:"run_as,omitempty"`
	ParentPID int       `json:"parent_pid"`        // the process that started the helper
	StatusFD  int       `json:"status_fd"`         // 0: report setup errors on stderr only
	Seccomp   []byte    `json:"seccomp"`           // the tool's compiled seccomp filter (landlock)
	Ruleset   *Ruleset  `json:"ruleset,omitempty"` // the landlock ruleset (nil when Plain)
	// Rlimits, when set, are given to the tool by the helper itself when
	// it can hold them (holdsLimits), else by the limits wrapper, which
	// also joins the call's cgroup through ProcsFD (0 = none). See Fork.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	ProcsFD int      `json:"procs_fd,omitempty"`

	// SelfLimited (the helper's own decision, never in the spec): the
	// helper set Rlimits on itself, so the tool inherits them at fork.
	SelfLimited bool `json:"-"`
}

// Grant is one resolved path a landlocked tool may use. Dir comes from the
// parent's check: if the path changed type since, a directory rule on a
// file fails and a file rule on a directory grants less, never more.
type Grant struct {
	Path  string `json:"path"`
	Write bool   `json:"write,omitempty"`
	Dir   bool   `json:"dir,omitempty"`
	// FD is Path opened by the parent without following symlinks: the
	// rule covers that inode, whatever Path names by the time the helper
	// runs. 0 means the helper opens Path itself (the same way).
	FD int `json:"fd,omitempty"`
	// File is the parent's descriptor (never in the spec).
	File *os.File `json:"-"`
}

// Rlimit is one resource limit to set on the tool's processes.
type Rlimit struct {
	Resource int    `json:"r"`
	Cur      uint64 `json:"c"`
	Max      uint64 `json:"m"`
}

// LimitsSpec is what the limits wrapper reads from fd 3, as JSON.
type LimitsSpec struct {
	Path    string   `json:"path"`
	Argv    []string `json:"argv"` // argv[0] included
	Env     []string `json:"env"`  // the tool's environment; the wrapper's own (a Cmd caller's additions) follows it
	Rlimits []Rlimit `json:"rlimits"`
	// ProcsFD is the descriptor of the call's cgroup.procs (0 = none).
	ProcsFD int `json:"procs_fd,omitempty"`
	// ExeFD, when set, is the checked executable's descriptor: the wrapper
	// executes it (/proc/self/fd/N) rather than Path, so what was hashed
	// is what runs (DESIGN.md §6).
	ExeFD int `json:"exe_fd,omitempty"`
	// StatusFD receives "ERRNO message" when the tool could not be
	// started; it is closed on exec, so EOF without a word means started.
	StatusFD int `json:"status_fd,omitempty"`
}

// DecodeSpec decodes the spec of the helper or of the limits wrapper into
// v, refusing a field it does not know: a caller built from newer source
// than this binary may be asking for a restriction or a limit it would
// silently leave out.
func DecodeSpec(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding spec (is this binary from the same build as toolbox?): %w", err)
	}
	return nil
}

// ReadSpecFD decodes the spec on fd 3 into v, then opens the status
// descriptor statusFD reports (nil when it reports none). The helper and
// the limits wrapper both read their spec with it: a *Spec in its binary
// form (Spec.UnmarshalBinary), anything else as JSON (strictly:
// DecodeSpec).
func ReadSpecFD(v any, statusFD func() int) (*os.File, error) {
	f := os.NewFile(3, "spec")
	if f == nil {
		return nil, errors.New("no spec descriptor")
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	if hs, ok := v.(*Spec); ok {
		err = hs.UnmarshalBinary(data)
	} else {
		err = DecodeSpec(data, v)
	}
	if err != nil {
		return nil, err
	}
	if fd := statusFD(); fd > 2 {
		return os.NewFile(uintptr(fd), "status"), nil
	}
	return nil, nil
}

// ErrnoPrefix starts a status line whose error is a system call's: the
// parent rebuilds it, so that "not found" and "not executable" keep their
// meaning (fs.ErrNotExist, fs.ErrPermission, ENOEXEC) across the helper.
const ErrnoPrefix = "errno "

// StatusLine is err as the helper reports it: one line, with the errno of
// an exec failure in front.
func StatusLine(err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	var pe *os.PathError
	var no syscall.Errno
	if errors.As(err, &pe) && errors.As(pe.Err, &no) {
		return ErrnoPrefix + strconv.Itoa(int(no)) + " " + pe.Path
	}
	return msg
}
