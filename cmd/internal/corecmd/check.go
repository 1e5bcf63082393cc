package corecmd

import (
	"github.com/toolbox-dev/toolbox/cmd/internal/cli"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/compiler"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// CheckOptions are the inputs of the check command.
type CheckOptions struct {
	*cli.Globals
	Probe        bool
	JSON         bool
	ProbeTimeout time.Duration
}

// NewCmdCheck builds the check command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdCheck(g *cli.Globals, runF func(*CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that the toolbox file and its lock load (--probe: run every probe now)",
		Long: `check verifies what ` + "`toolbox run`" + ` verifies, for every tool, without running
any: the toolbox file loads and its configuration is the locked one, and
each tool's binary has its locked sha256 and platform. Each problem is
printed with the message run would give; it exits 1 when there is one, 2
when a required capability has no usable backend in the lock, else 0.

With --probe it runs every probe now, as lock would, without writing a lock,
and reports per capability the active backend and every candidate with its
status (ok, failed, unverified, skipped), time, detail and fix; which limits
this machine enforces; and the exposure of every tool and of the builtin
"process": what a run would give it now (mechanism, uid, the paths it reads
and writes, network, tmp, seccomp rule set, protected paths, limits) and a
verdict, confined, partial or exposed, with the reasons. Tools naming the
workspace are explained on the workspace a run would use (--workspace,
$TOOLBOX_WORKSPACE, the toolbox file's default, else the current directory):
writing it keeps a tool confined (reason writes-workspace). It exits 2 when a
required capability has no active backend, 1 when a tool cannot be locked.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.JSON && !opts.Probe {
				return &cli.UsageError{Err: errors.New("--json needs --probe: only the probe report is printed as JSON")}
			}
			if opts.Workspace != "" && !opts.Probe {
				return &cli.UsageError{Err: errors.New("--workspace needs --probe: only the probes run tools")}
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Probe {
				return probeRun(cmd.Context(), opts)
			}
			return checkRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Probe, "probe", false, "run every probe now and report")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "with --probe: print the probe report as JSON")
	cmd.Flags().DurationVar(&opts.ProbeTimeout, "probe-timeout", 0, "bound each describe and check (default 10s for describe, 30s for check)")
	cmd.Flags().StringVar(&opts.Workspace, "workspace", "", "with --probe: run the checks on this project directory and explain the exposure on it (default $TOOLBOX_WORKSPACE, else checks on a private empty one, as lock does, and the exposure on a run's default)")
	return cmd
}

func checkRun(opts *CheckOptions) error {
	file := opts.ToolboxFile()
	if err := opts.NeedToolboxFile(); err != nil {
		return err
	}
	if _, err := compiler.Load(file); err != nil {
		return err
	}
	lockPath, l, err := cli.ReadLock(opts.Globals)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(lockPath)
	if err != nil {
		return err
	}
	// What run would refuse, with run's words: each problem on its line.
	problems, unusable := launcher.CheckLock(abs, l)
	for _, p := range problems {
		fmt.Fprintf(opts.IO.Err, "error: %v\n", p)
	}
	if len(problems) > 0 {
		return cli.WithCode(cli.ExitError, nil)
	}
	for _, u := range unusable {
		fmt.Fprintf(opts.IO.Err, "note: run refuses it: %v\n", u)
	}
	if name := requiredWithoutBackend(l); name != "" {
		return cli.WithCode(cli.ExitUsage, requiredError(name))
	}
	fmt.Fprintf(opts.IO.Err, "%s and %s load and agree (%s, %s)\n", file, lockPath, cli.Plural(len(l.Tools), "tool"), cli.PluralOf(len(l.Capabilities), "capability", "capabilities"))
	return nil
}

// requiredWithoutBackend is the first required capability of l (by name)
// that has no usable backend, or "".
func requiredWithoutBackend(l *manifest.Lock) string {
	for _, name := range cli.SortedKeys(l.Capabilities) {
		if c := l.Capabilities[name]; c != nil && c.Required && len(c.UsableBackends(l.Tools)) == 0 {
			return name
		}
	}
	return ""
}

// requiredError is the error of lock, check and check --probe (exit 2)
// when a required capability has no usable backend.
func requiredError(name string) error {
	return fmt.Errorf("required capability %q has no usable backend; see the fixes above, or run `toolbox check --probe`", name)
}

// probeReport is the --json shape of check --probe.
type probeReport struct {
	Capabilities []capabilityProbe `json:"capabilities"`
	Tools        []toolProbe       `json:"tools"`
	// Limits says which limits this machine enforces, and how.
	Limits []sandbox.LimitEnforcement `json:"limits"`
	// Exposure is what every locked tool and the builtin "process" would
	// reach if run now, with a verdict each: for the lock on disk, which
	// runs use, when it loads.
	Exposure exposureReport `json:"exposure"`
	// LockDrift lists how the lock on disk differs from what the probes
	// found (absent when they agree, or when there is no lock yet).
	LockDrift []string `json:"lock_drift,omitempty"`
}

type capabilityProbe struct {
	Capability string      `json:"capability"`
	Required   bool        `json:"required"`
	Active     string      `json:"active"`
	Backends   []toolProbe `json:"backends"`
}

type toolProbe struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	Mechanism string `json:"mechanism,omitempty"`
	MS        int64  `json:"ms"`
	Detail    string `json:"detail,omitempty"`
	Fix       string `json:"fix,omitempty"`
	// Limits are the tool's resolved limits (absent: none, or not locked).
	Limits *manifest.Limits `json:"limits,omitempty"`
}

func probeRun(ctx context.Context, opts *CheckOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := opts.NeedToolboxFile(); err != nil {
		return err
	}
	cfg, err := compiler.Load(opts.ToolboxFile())
	if err != nil {
		return err
	}
	ws, err := opts.ChosenWorkspace()
	if err != nil {
		return err
	}
	res := compiler.Compile(ctx, cfg, compiler.Options{Sandbox: opts.Sandbox, CallerEnv: os.Environ(), DescribeTimeout: opts.ProbeTimeout, CheckTimeout: opts.ProbeTimeout, StateDir: opts.StateDirInUse(), Workspace: ws})
	// The lock on disk is read once: it marks MCP drift (a backend is ok
	// when its server lists its locked tools) and is compared below.
	lockPath := manifest.LockPath(opts.ToolboxFile())
	disk := manifest.ReadDiskLock(lockPath)
	if disk.Lock != nil {
		compiler.MarkDrift(res, disk.Lock)
	}
	rep := buildProbeReport(res)
	explained := res.Draft
	var drift error
	if res.Lock != nil && opts.Sandbox == "" {
		// Runs use the lock on disk, not what the probes found: a lock
		// edited by hand (or by a tool) shows here, and the exposure is
		// the one of the lock a run would use. --sandbox probes another
		// mechanism on purpose, so its lock differs by design.
		diskLock, changes, err := disk.ProbedDrift(res.Lock)
		if err != nil {
			return fmt.Errorf("comparing with %s: %w", lockPath, err)
		}
		if changes != nil {
			rep.LockDrift = changes
			drift = cli.WithCode(cli.ExitDrift, fmt.Errorf("the lock on disk is not what the probes found; runs use the lock on disk; run `toolbox lock`:\n  %s", strings.Join(changes, "\n  ")))
			if diskLock != nil {
				explained = diskLock
			}
		}
	}
	rep.Exposure = buildExposure(opts, opts.ToolboxFile(), explained, os.Environ(), ws)
	if opts.JSON {
		if err := cli.WriteJSON(opts.IO.Out, rep); err != nil {
			return err
		}
	} else {
		printProbeReport(opts, rep)
	}
	for _, c := range rep.Capabilities {
		if c.Required && c.Active == "" {
			return cli.WithCode(cli.ExitUsage, requiredError(c.Capability))
		}
	}
	if len(res.Errs) > 0 {
		return errors.New(joinErrs("some tools cannot be locked:", res.Errs))
	}
	return drift
}

func buildProbeReport(res *compiler.Result) probeReport {
	rep := probeReport{Capabilities: []capabilityProbe{}, Tools: []toolProbe{}}
	toTP := func(r *compiler.ToolReport) toolProbe {
		return toolProbe{Name: r.Name, Kind: r.Kind, Status: r.Status, Mechanism: r.Mechanism, MS: r.Duration.Milliseconds(), Detail: r.Detail, Fix: r.Fix, Limits: r.Limits}
	}
	for _, c := range res.Capabilities {
		cp := capabilityProbe{Capability: c.Name, Required: c.Required, Active: c.Active}
		for _, b := range c.Backends {
			if r := res.Tools[b]; r != nil {
				cp.Backends = append(cp.Backends, toTP(r))
			}
		}
		rep.Capabilities = append(rep.Capabilities, cp)
	}
	for _, name := range cli.SortedKeys(res.Tools) {
		rep.Tools = append(rep.Tools, toTP(res.Tools[name]))
	}
	rep.Limits = sandbox.Detect().LimitEnforcement()
	return rep
}

func printProbeReport(opts *CheckOptions, rep probeReport) {
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	for _, c := range rep.Capabilities {
		active := c.Active
		if active == "" {
			active = "none"
		}
		req := ""
		if c.Required {
			req = " (required)"
		}
		fmt.Fprintf(w, "capability %s%s: active %s\n", c.Capability, req, active)
		for _, b := range c.Backends {
			printToolLine(w, "  ", b)
		}
	}
	fmt.Fprintln(w, "tools:")
	for _, t := range rep.Tools {
		printToolLine(w, "  ", t)
	}
	printLimits(w, rep.Limits)
	w.Flush()
	printExposure(opts.IO.Out, rep.Exposure)
}

func printToolLine(w *tabwriter.Writer, indent string, t toolProbe) {
	mech := t.Mechanism
	if mech == "" {
		mech = "-"
	}
	fmt.Fprintf(w, "%s%s\t%s\t%s\t%dms\t%s", indent, t.Name, t.Status, mech, t.MS, t.Detail)
	if t.Fix != "" {
		fmt.Fprintf(w, " (fix: %s)", t.Fix)
	}
	fmt.Fprintln(w)
}
