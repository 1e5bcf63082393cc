package corecmd

import (
	"github.com/toolbox-dev/toolbox/cmd/internal/cli"

	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/compiler"
	"github.com/toolbox-dev/toolbox/manifest"
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
		Long: `check exits 0 when the toolbox file and its lock load and agree, 1 otherwise.

With --probe it runs every probe now, as lock would, without writing anything,
and reports per capability the active backend and every candidate with its
status (ok, failed, unverified, skipped), time, detail and fix. It exits 2 when
a required capability has no active backend, 1 when a tool cannot be locked.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
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
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the probe report as JSON")
	cmd.Flags().DurationVar(&opts.ProbeTimeout, "probe-timeout", 0, "bound each describe and check (default 10s for describe, 30s for check)")
	return cmd
}

func checkRun(opts *CheckOptions) error {
	file := opts.ToolboxFile()
	if _, err := compiler.Load(file); err != nil {
		return err
	}
	lockPath := manifest.LockPath(file)
	l, err := manifest.Read(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s does not exist; run `toolbox lock`", lockPath)
	}
	if err != nil {
		return err
	}
	sum, err := manifest.HashFile(filepath.Join(filepath.Dir(lockPath), l.File.Path))
	if err != nil {
		return err
	}
	if sum != l.File.SHA256 {
		return fmt.Errorf("%s changed since it was locked; run `toolbox lock`", file)
	}
	fmt.Fprintf(opts.IO.Err, "%s and %s load and agree (%d tools, %d capabilities)\n", file, lockPath, len(l.Tools), len(l.Capabilities))
	return nil
}

// probeReport is the --json shape of check --probe.
type probeReport struct {
	Capabilities []capabilityProbe `json:"capabilities"`
	Tools        []toolProbe       `json:"tools"`
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
}

func probeRun(ctx context.Context, opts *CheckOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := compiler.Load(opts.ToolboxFile())
	if err != nil {
		return err
	}
	res := compiler.Compile(ctx, cfg, compiler.Options{Sandbox: opts.Sandbox, CallerEnv: os.Environ(), DescribeTimeout: opts.ProbeTimeout, CheckTimeout: opts.ProbeTimeout, StateDir: opts.StateDirInUse()})
	rep := buildProbeReport(res)
	if opts.JSON {
		if err := cli.WriteJSON(opts.IO.Out, rep); err != nil {
			return err
		}
	} else {
		printProbeReport(opts, rep)
	}
	for _, c := range rep.Capabilities {
		if c.Required && c.Active == "" {
			return cli.WithCode(cli.ExitUsage, fmt.Errorf("required capability %q has no usable backend; see the fixes above", c.Capability))
		}
	}
	if len(res.Errs) > 0 {
		return errors.New(joinErrs("some tools cannot be locked:", res.Errs))
	}
	return nil
}

func buildProbeReport(res *compiler.Result) probeReport {
	rep := probeReport{Capabilities: []capabilityProbe{}, Tools: []toolProbe{}}
	toTP := func(r *compiler.ToolReport) toolProbe {
		return toolProbe{Name: r.Name, Kind: r.Kind, Status: r.Status, Mechanism: r.Mechanism, MS: r.Duration.Milliseconds(), Detail: r.Detail, Fix: r.Fix}
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
	w.Flush()
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
