package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// PluginCheck runs Check on a plugin tool started under spec with cmd's
// binary, environment and directory. It is injected because this package
// does not link the plugin host (gRPC).
type PluginCheck func(ctx context.Context, cmd sandbox.Command, spec *sandbox.Spec, timeout time.Duration) manifest.Probe

// Check runs `TOOL check` of a locked tool under its real runtime (runspec:
// sandbox, run_as, envdir, rundir) and turns what it printed into a probe
// result: ok when it printed {"ok": true, ...} and exited 0; failed, with
// the tool's detail and fix or the reason it could not be read, otherwise;
// unverified when the tool declares no check. lockDir resolves the lock's
// relative paths; trust is what the check's sandbox protects
// (runspec.NewTrust at run time). plugin may be nil when t is not a plugin
// tool. The binary is opened once and must still have t.SHA256; what runs
// is that descriptor (sandbox.Command.Exe), never a file swapped in since.
//
// The values of the tool's envdir (runspec.EnvdirSecrets) are redacted
// from the result's detail and fix: the lock that keeps them is committed.
func Check(ctx context.Context, lockDir string, t *manifest.Tool, trust *runspec.Trust, allowlist, callerEnv []string, timeout time.Duration, plugin PluginCheck) manifest.Probe {
	p := check(ctx, lockDir, t, trust, allowlist, callerEnv, timeout, plugin)
	if secrets := runspec.EnvdirSecrets(lockDir, t); len(secrets) > 0 {
		slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
		for _, s := range secrets {
			p.Detail = strings.ReplaceAll(p.Detail, s, redacted)
			p.Fix = strings.ReplaceAll(p.Fix, s, redacted)
		}
	}
	return p
}

// redacted replaces a secret in a probe result, as launcher.Redacted does
// in a call's report.
const redacted = "[redacted]"

func check(ctx context.Context, lockDir string, t *manifest.Tool, trust *runspec.Trust, allowlist, callerEnv []string, timeout time.Duration, plugin PluginCheck) manifest.Probe {
	if t.Describe == nil || !t.Describe.Check {
		return manifest.Probe{Status: manifest.StatusUnverified, Detail: "the tool declares no check"}
	}
	spec, cmd, err := runspec.Prepare(lockDir, t, allowlist, runspec.Params{Verb: runspec.VerbCheck, CallerEnv: callerEnv, Trust: trust})
	if err != nil {
		return manifest.Probe{Status: manifest.StatusFailed, Detail: fmt.Sprintf("preparing check: %v", err)}
	}
	exe, err := sandbox.OpenExecutable(cmd.Path)
	if err != nil {
		return manifest.Probe{Status: manifest.StatusFailed, Detail: fmt.Sprintf("opening the binary: %v", err)}
	}
	defer exe.Close()
	if exe.SHA256() != t.SHA256 {
		return manifest.Probe{Status: manifest.StatusFailed, Detail: "the binary changed since it was locked", Fix: "run `toolbox lock`"}
	}
	cmd.Exe = exe
	if t.Kind == manifest.KindPlugin {
		if plugin == nil {
			return manifest.Probe{Status: manifest.StatusFailed, Detail: "checking a plugin needs the plugin host"}
		}
		return plugin(ctx, cmd, spec, timeout)
	}
	c, err := Capture(ctx, spec, cmd, timeout)
	if err != nil {
		return manifest.Probe{Status: manifest.StatusFailed, Detail: fmt.Sprintf("running check: %v", err)}
	}
	if c.TimedOut || c.Overflow {
		return manifest.Probe{Status: manifest.StatusFailed, Detail: c.Failure("check", timeout).Error()}
	}
	res, perr := protocol.ParseCheck(c.Stdout)
	if perr != nil {
		detail := fmt.Sprintf("check printed no valid result: %v", perr)
		if f := c.Failure("check", timeout); f != nil {
			detail = f.Error()
		}
		return manifest.Probe{Status: manifest.StatusFailed, Detail: detail, Fix: crashFix(spec, c.Code)}
	}
	if !res.OK || c.Code != 0 {
		if res.Detail == "" {
			if f := c.Failure("check", timeout); f != nil {
				res.Detail = f.Error()
			} else {
				res.Detail = "check reported not ok"
			}
		}
		return manifest.Probe{Status: manifest.StatusFailed, Detail: res.Detail, Fix: res.Fix}
	}
	return manifest.Probe{Status: manifest.StatusOK, Detail: res.Detail}
}

// crashFix is the fix for a check that printed no valid result and exited
// with code: a check that could not run a program (126: not executable or
// not permitted, 127: not found) inside its sandbox is most often running
// one the sandbox does not grant (an interpreter shim under $HOME, a tool
// in /opt); one that failed otherwise is to be read in its stderr (the
// detail); one that exited 0 printed the wrong thing.
func crashFix(spec *sandbox.Spec, code int) string {
	const protocolFix = "`TOOL check` must print {\"ok\": bool, \"detail\": ..., \"fix\": ...}"
	sandboxed := spec != nil && spec.Mechanism != "" && spec.Mechanism != sandbox.None
	switch {
	case (code == 126 || code == 127) && sandboxed:
		return fmt.Sprintf("a program the check runs could not be executed in its %s sandbox (exit %d): it sees only the system directories (/usr, /bin, /lib*), its own directory and its fs.read paths; call a program there (e.g. /usr/bin/python3, not a shim under $HOME) or add the program's directory to runtime.sandbox.fs.read, then run `toolbox lock`", spec.Mechanism, code)
	case code != 0:
		return fmt.Sprintf("the check exited %d before printing its result (its stderr is in the detail): make it run, and print %s", code, protocolFix[len("`TOOL check` must print "):])
	}
	return protocolFix
}
