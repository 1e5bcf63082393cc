package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

// Support is what this machine can enforce, found by running the
// mechanisms (Detect). The zero value supports nothing. Tests build their
// own values to exercise Resolve on machines they cannot produce.
type Support struct {
	// Bwrap: bubblewrap ran a trivial program with the flags toolbox uses
	// (new namespaces, no network, private /tmp). BwrapReason says why not.
	Bwrap       bool
	BwrapReason string
	// BwrapPin is the bubblewrap found on PATH and probed (nil when none
	// was found): what a lock pins for its bwrap tools.
	BwrapPin *BwrapPin
	// BwrapRunAs: bubblewrap also ran as another user (it then needs
	// unprivileged user namespaces). BwrapRunAsReason says why not.
	BwrapRunAs       bool
	BwrapRunAsReason string
	// LandlockABI is the Landlock ABI the kernel reports (0 = none).
	// Landlock: the helper restricted itself with the required ABI and
	// ran a trivial program. LandlockReason says why not.
	LandlockABI    int
	Landlock       bool
	LandlockReason string
	// RunAs: toolbox can switch users (it runs as root). RunAsReason says
	// why not.
	RunAs       bool
	RunAsReason string
	// Cgroup is what cgroup v2 offers for limits (DetectCgroup).
	Cgroup CgroupSupport
	// SharedTmpMount: toolbox may mount the tmpfs that bounds the
	// toolbox's shared tmp (euid 0 with CAP_SYS_ADMIN; DESIGN.md §6, D6).
	SharedTmpMount bool
}

// Need is what a tool declared, as far as choosing a mechanism goes.
type Need struct {
	// Sandbox: the tool declares runtime.sandbox.
	Sandbox bool
	// NetNone: runtime.sandbox.net is "none".
	NetNone bool
	// TmpPrivate: runtime.sandbox.tmp is "private".
	TmpPrivate bool
	// HasReadWrite: runtime.sandbox.fs.write is not empty. Both mechanisms
	// honour writable paths, so no rule refuses on it today; it is part of
	// Need so that callers describe the whole declaration.
	HasReadWrite bool
	// RunAs: the tool declares runtime.run_as.
	RunAs bool
	// UnixSockets: the tool creates unix sockets (a plugin: go-plugin's
	// handshake; Spec.UnixSockets).
	UnixSockets bool
	// Root: the tool would run as host uid 0 (run_as names uid 0, or it
	// declares no run_as and toolbox runs as root). With UnixSockets,
	// landlock refuses it (see Spec.UnixSockets).
	Root bool
}

var (
	detectOnce sync.Once
	detected   Support
)

// Detect probes this machine once per process (later calls return the
// same value): it finds bubblewrap on PATH and pins it (FindBwrap), runs
// it on `true` with the flags toolbox uses,
// as this user and (when root) as nobody, starts the landlock helper on
// `true`, and checks whether toolbox runs as root. The landlock probe
// needs the binary's main to call Init first. It takes tens of
// milliseconds. It is for lock time (and `check --probe`): a run never
// calls it, and never searches PATH, but executes the bwrap the lock
// pinned (Spec.Bwrap).
func Detect() Support {
	detectOnce.Do(func() { detected = probe() })
	return detected
}

// probeIdentity (nobody) is the identity used to probe run_as under bwrap.
var probeIdentity = &Identity{UID: 65534, GID: 65534, Groups: []uint32{65534}}

func probe() Support {
	s := Support{Cgroup: DetectCgroup(), SharedTmpMount: os.Geteuid() == 0 && helper.HasCapSysAdmin()}
	if os.Geteuid() == 0 {
		s.RunAs = true
	} else {
		s.RunAsReason = fmt.Sprintf("toolbox runs as uid %d, not root, so it cannot switch users", os.Geteuid())
	}
	truePath := "/usr/bin/true"
	if _, err := os.Stat(truePath); err != nil {
		truePath = "/bin/true"
	}
	if pin, err := FindBwrap(); err != nil {
		s.BwrapReason = err.Error()
	} else {
		s.BwrapPin = pin
		spec := &Spec{Mechanism: Bwrap, NetNone: true, TmpPrivate: true, Bwrap: pin}
		s.Bwrap, s.BwrapReason = tryRun(spec, truePath)
		if !s.Bwrap {
			// Name the file: the one found on PATH may not be the one the
			// operator thinks of.
			s.BwrapReason = fmt.Sprintf("%s (found on PATH): %s", pin.Path, s.BwrapReason)
			s.BwrapRunAsReason = "bwrap does not run: " + s.BwrapReason
		} else if !s.RunAs {
			s.BwrapRunAsReason = s.RunAsReason
		} else {
			spec.RunAs = probeIdentity
			s.BwrapRunAs, s.BwrapRunAsReason = tryRun(spec, truePath)
		}
	}
	s.LandlockABI = helper.LandlockABI()
	if s.LandlockABI < helper.RequiredLandlockABI {
		s.LandlockReason = fmt.Sprintf("landlock ABI %d is required, this kernel offers %d", helper.RequiredLandlockABI, s.LandlockABI)
		if s.LandlockABI == 0 {
			s.LandlockReason = "the kernel has no landlock (too old, or not enabled at boot)"
		}
	} else {
		s.Landlock, s.LandlockReason = tryRun(&Spec{Mechanism: Landlock}, truePath)
	}
	return s
}

// tryRun runs path under spec with a deadline and reports whether it
// exited 0, and otherwise why not.
func tryRun(spec *Spec, path string) (bool, string) {
	var stderr bytes.Buffer
	p, err := Start(spec, Command{Path: path, Stderr: &stderr})
	if err != nil {
		return false, err.Error()
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		_ = p.Signal(syscall.SIGKILL)
	}
	code, err := p.Wait()
	switch {
	case err != nil:
		return false, err.Error()
	case code != 0:
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no message"
		}
		return false, fmt.Sprintf("exit code %d: %s", code, msg)
	}
	return true, ""
}

// Resolve is Detect().Resolve(requested, need).
func Resolve(requested Mechanism, need Need) (Mechanism, error) {
	return Detect().Resolve(requested, need)
}

// Resolve chooses how to run a tool (DESIGN.md §6): requested is the
// operator's setting, need the tool's declaration. A tool that declares
// neither sandbox nor run_as runs as today (None), whatever is requested.
// Otherwise none is refused, bwrap and landlock are used when they can
// honour every declared field, and auto takes bwrap, else landlock
// (a tool declaring net: none or tmp: private never falls to landlock).
// A tool with run_as but no sandbox is confined by the mechanism chosen,
// with its own directory and the system directories only.
// Errors: *RefusalError naming the field that blocked (for auto, the
// field that kept landlock out, with both mechanisms' reasons).
func (s Support) Resolve(requested Mechanism, need Need) (Mechanism, error) {
	if !need.Sandbox && !need.RunAs {
		switch requested {
		case None, Bwrap, Landlock, Auto:
			return None, nil
		}
		return "", fmt.Errorf("unknown sandbox mechanism %q", requested)
	}
	switch requested {
	case None:
		if need.Sandbox {
			return "", refuse(FieldSandbox, None, `set sandbox = "auto" (or "bwrap" or "landlock") in the toolbox file`,
				"the toolbox file sets sandbox = \"none\" but the tool declares a sandbox")
		}
		return "", refuse(FieldRunAs, None, `set sandbox = "auto" (or "bwrap" or "landlock") in the toolbox file, or remove run_as`,
			"the toolbox file sets sandbox = \"none\", under which run_as is not applied")
	case Bwrap:
		if r := s.bwrapRefusal(need); r != nil {
			return "", r
		}
		return Bwrap, nil
	case Landlock:
		if r := s.landlockRefusal(need); r != nil {
			return "", r
		}
		return Landlock, nil
	case Auto:
		rb := s.bwrapRefusal(need)
		if rb == nil {
			return Bwrap, nil
		}
		rl := s.landlockRefusal(need)
		if rl == nil {
			return Landlock, nil
		}
		field := rl.Field
		if field == FieldSandbox {
			field = rb.Field
		}
		return "", &RefusalError{
			Field:     field,
			Mechanism: Auto,
			Reason:    fmt.Sprintf("bwrap: %s (%s); landlock: %s (%s)", rb.Reason, rb.Field, rl.Reason, rl.Field),
			Fix:       rl.Fix,
		}
	}
	return "", fmt.Errorf("unknown sandbox mechanism %q", requested)
}

func (s Support) bwrapRefusal(need Need) *RefusalError {
	if !s.Bwrap {
		return refuse(FieldSandbox, Bwrap, fixBwrap, "bwrap is not usable here: %s", orUnknown(s.BwrapReason))
	}
	if need.RunAs && !s.BwrapRunAs {
		return refuse(FieldRunAs, Bwrap, "run toolbox as root on a machine that allows user namespaces, or remove run_as",
			"bwrap cannot run as another user here: %s", orUnknown(s.BwrapRunAsReason))
	}
	return nil
}

func (s Support) landlockRefusal(need Need) *RefusalError {
	if r := landlockDeclRefusal(need.NetNone, need.TmpPrivate); r != nil {
		return r
	}
	if r := landlockSocketRefusal(need.UnixSockets, need.Root, need.RunAs); r != nil {
		return r
	}
	if !s.Landlock {
		return refuse(FieldSandbox, Landlock, `use a kernel with landlock ABI 6 (Linux 6.12+), or set sandbox = "bwrap"`,
			"landlock is not usable here: %s", orUnknown(s.LandlockReason))
	}
	if need.RunAs && !s.RunAs {
		return refuse(FieldRunAs, Landlock, "run toolbox as root, or remove run_as", "%s", orUnknown(s.RunAsReason))
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "not probed"
	}
	return s
}
