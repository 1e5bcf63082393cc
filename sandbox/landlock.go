package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// landlockConfig is the ruleset the helper enforces: every filesystem
// right is handled (so only granted paths are reachable), and signals and
// abstract unix sockets are scoped (the tool reaches neither a process
// nor an abstract socket outside its sandbox). Network rights are not
// handled: landlock never runs a tool that declares net: none (see
// Resolve).
func landlockConfig() (landlock.Config, error) {
	c, err := landlock.NewConfig(landlock.V5.HandledAccessFS, landlock.ScopedSet(llsys.ScopeSignal|llsys.ScopeAbstractUnixSocket))
	if err != nil {
		return landlock.Config{}, fmt.Errorf("building the landlock configuration: %w", err)
	}
	return *c, nil
}

// landlockRuleset is landlockConfig as the helper's spec carries it: the
// helper makes the system calls itself (package helper links no cgo).
func landlockRuleset() (*helper.Ruleset, error) {
	c, err := landlockConfig()
	if err != nil {
		return nil, err
	}
	return &helper.Ruleset{HandledFS: uint64(c.HandledAccessFS), HandledNet: uint64(c.HandledAccessNet), Scoped: uint64(c.Scoped)}, nil
}

// minimalGrants drops the grants another directory grant already covers
// with at least the same access (/bin under /usr on usrmerge systems, a
// read path inside a writable one): every rule costs the helper three
// system calls.
func minimalGrants(gs []helperGrant) []helperGrant {
	slices.SortStableFunc(gs, func(a, b helperGrant) int { return strings.Compare(a.Path, b.Path) })
	var out []helperGrant
	for _, g := range gs {
		covered := slices.ContainsFunc(out, func(k helperGrant) bool {
			return k.Dir && within(g.Path, k.Path) && (k.Write || !g.Write)
		})
		if !covered {
			out = append(out, g)
		}
	}
	return out
}

// landlockCmd builds the helper invocation for c (see helperCmd). When
// status is true the helper reports "ok" or its setup error on an extra
// pipe, returned as statusR.
func landlockCmd(s *Spec, c Command, status bool, lp *limitPlan) (cmd *exec.Cmd, statusR *os.File, closers []*os.File, err error) {
	if r := landlockDeclRefusal(s.NetNone, s.TmpPrivate); r != nil {
		return nil, nil, nil, r
	}
	if r := landlockSocketRefusal(s.UnixSockets, toolUID(s) == 0, s.RunAs != nil); r != nil {
		return nil, nil, nil, r
	}
	if !initDone.Load() {
		return nil, nil, nil, fmt.Errorf("%w: the landlock helper needs sandbox.Init to be called first in main (or TestMain)", ErrStartFailed)
	}
	lay, err := landlockPlan(s, c)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, g := range lay.gs {
		closers = append(closers, g.f)
	}
	hs := helperSpec{
		Path:      lay.exe,
		Argv:      append([]string{c.Path}, c.Args...),
		Env:       withTmpdir(c.Env, lay.tmpdir),
		Dir:       lay.dir,
		RunAs:     s.RunAs,
		ParentPID: os.Getpid(),
		Grants:    lay.grants,
	}
	if hs.Seccomp, err = s.filterBytes(Landlock); err != nil {
		closeAll(closers)
		return nil, nil, nil, err
	}
	if hs.Ruleset, err = landlockRuleset(); err != nil {
		closeAll(closers)
		return nil, nil, nil, err
	}
	return helperCmd(&hs, status, lp, c.Exe, Landlock, closers)
}

// landlockLayout is what the landlock helper grants for one start: the
// declared grants (and the shared tmp), each opened (the caller closes
// them: closeGrants); the executable and working directory, resolved; the
// shared tmp's path ("" without one); and every rule the helper adds
// (system entries, devices, the grants), minimal.
type landlockLayout struct {
	gs       []grant
	exe, dir string
	tmpdir   string
	grants   []helperGrant
	gp       []guarded // the guarded paths checked against the grants
}

// landlockPlan lays out the Landlock rules of c under s (landlockCmd and
// Explain): it resolves and opens the grants, refuses a grant covering a
// guarded path (landlock cannot mask), checks that the executable and the
// working directory are inside, and lists the rules. On error nothing
// stays open.
func landlockPlan(s *Spec, c Command) (*landlockLayout, error) {
	gs, err := s.grants(c.Exe)
	if err != nil {
		return nil, err
	}
	gp := s.guardedPaths()
	if err := s.missingHiddenRefusal(Landlock, gs); err != nil {
		closeGrants(gs)
		return nil, err
	}
	if err := guardRefusal(Landlock, gs, gp); err != nil {
		closeGrants(gs)
		return nil, err
	}
	sys := systemEntries(true)
	lay := &landlockLayout{gs: gs, gp: gp}
	if lay.exe, _, lay.dir, _, err = s.toolPaths(c, gs, sys); err != nil {
		closeGrants(gs)
		return nil, err
	}
	for _, g := range gs {
		if g.field == FieldTmp {
			lay.tmpdir = g.src
		}
	}
	var grants []helperGrant
	for _, e := range sys {
		grants = append(grants, helperGrant{Path: e.src, Dir: e.dir})
	}
	// No /proc: Landlock cannot tell the tool's own entries from other
	// processes', and on Linux 6.18 a landlocked root process still read
	// toolbox's /proc/PID/environ (the operator's environment).
	for _, d := range existing(readableDevices) {
		grants = append(grants, helperGrant{Path: d})
	}
	for _, d := range existing(writableDevices) {
		grants = append(grants, helperGrant{Path: d, Write: true})
	}
	for _, g := range gs {
		grants = append(grants, helperGrant{Path: g.src, Write: g.write, Dir: g.dir, File: g.f})
	}
	lay.grants = minimalGrants(grants)
	return lay, nil
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// landlockDeclRefusal refuses the declarations landlock can never honour
// (NOTES.md, Landlock): net: none and tmp: private.
func landlockDeclRefusal(netNone, tmpPrivate bool) *RefusalError {
	if netNone {
		return refuse(FieldNet, Landlock, `set sandbox = "bwrap" (or "auto" with bubblewrap installed), or declare net = "host"`,
			"landlock cannot cut the network: UDP, MPTCP and unix sockets outside the granted paths still work")
	}
	if tmpPrivate {
		return refuse(FieldTmp, Landlock, `set sandbox = "bwrap" (or "auto" with bubblewrap installed), or declare tmp = "shared"`,
			"landlock has no mount namespace, so it cannot give the tool its own /tmp")
	}
	return nil
}

// landlockSocketRefusal refuses a tool that creates unix sockets (a
// plugin) and runs as host uid 0 under landlock: Landlock (up to ABI 8)
// cannot confine a connect to a socket path, so such a tool reaches every
// socket it can name, and as uid 0 it passes the peer-credential check of
// toolbox's own daemon socket (DESIGN.md §6). runAs says whether the tool
// declares run_as (the field to name).
func landlockSocketRefusal(unixSockets, root, runAs bool) *RefusalError {
	if !unixSockets || !root {
		return nil
	}
	field := FieldSandbox
	if runAs {
		field = FieldRunAs
	}
	return refuse(field, Landlock, `set sandbox = "bwrap" (or "auto" with bubblewrap installed), or give the plugin a run_as user other than root`,
		"a plugin under landlock can connect to any unix socket path it can name, and as uid 0 it would pass the peer check of toolbox's daemon socket")
}

// readHelperStatus waits for the helper's first line: nil for "ok", the
// helper's error otherwise (also when it exited without a word).
func readHelperStatus(r *os.File) error {
	defer r.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	switch {
	case line == "ok":
		return nil
	case statusError(line) != nil:
		return statusError(line)
	case line != "":
		return fmt.Errorf("%w: sandbox helper: %s", ErrStartFailed, line)
	case err == io.EOF:
		return fmt.Errorf("%w: sandbox helper exited before starting the tool", ErrStartFailed)
	default:
		return fmt.Errorf("%w: reading sandbox helper status: %w", ErrStartFailed, err)
	}
}

// helperSysProcAttr: own session; the helper learns of its parent's death
// by SIGTERM (not SIGKILL) so that it can kill the whole tree first.
func helperSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
}
