package corecmd

import (
	"github.com/toolbox-dev/toolbox/cmd/internal/cli"

	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/compiler"
	"github.com/toolbox-dev/toolbox/launcher/exposure"
	"github.com/toolbox-dev/toolbox/manifest"
)

// LockOptions are the inputs of the lock command.
type LockOptions struct {
	*cli.Globals
	Check        bool
	ReadOnly     bool
	ProbeTimeout time.Duration
	// JSON prints a lockReport on stdout instead of the summary on stderr.
	JSON bool
}

// NewCmdLock builds the lock command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdLock(g *cli.Globals, runF func(*LockOptions) error) *cobra.Command {
	opts := &LockOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Probe every tool and write the lock file",
		Long: `lock loads the toolbox file, probes every tool in parallel (describe, then
check when the tool declares one) under its real runtime, resolves every
capability's active backend and writes toolbox.lock.json beside the toolbox
file, atomically and in canonical form.

With --check it writes nothing: it exits 3 and says what changed when the lock
on disk is missing or differs from what lock would write. --readonly is the
same verification for an environment that must never change the lock: it
fails with exit 1 instead.

It exits 2, after writing the lock, when a required capability has no usable
backend (as check --probe does). On a terminal it names each tool as its
probes finish; --json prints the lock's path and every probe result as JSON.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return lockRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Check, "check", false, "verify the lock is up to date; exit 3 on drift, write nothing")
	cmd.Flags().BoolVar(&opts.ReadOnly, "readonly", false, "verify the lock without ever writing it; exit 1 when it would change")
	cmd.Flags().DurationVar(&opts.ProbeTimeout, "probe-timeout", 0, "bound each describe and check (default 10s for describe, 30s for check)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the lock's path, what changed and every probe result as JSON on stdout")
	return cmd
}

// lockReport is the --json output of lock: the lock's path, whether it was
// written (false with --check and --readonly), what --check found changed
// (empty when up to date), and the probe report of check --probe.
type lockReport struct {
	Lock    string   `json:"lock"`
	Written bool     `json:"written"`
	Changes []string `json:"changes"`
	probeReport
}

func lockRun(ctx context.Context, opts *LockOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := opts.NeedToolboxFile(); err != nil {
		return err
	}
	file := opts.ToolboxFile()
	cfg, err := compiler.Load(file)
	if err != nil {
		return err
	}
	for _, n := range cfg.Notes {
		fmt.Fprintf(opts.IO.Err, "note: %s\n", n)
	}
	copts := compiler.Options{Sandbox: opts.Sandbox, CallerEnv: os.Environ(), DescribeTimeout: opts.ProbeTimeout, CheckTimeout: opts.ProbeTimeout, StateDir: opts.StateDirInUse()}
	if cli.IsTerminal(opts.IO.Err) {
		copts.OnProbe = progress(opts.IO.Err, len(cfg.Tools)+len(cfg.MCPServers))
	}
	res := compiler.Compile(ctx, cfg, copts)
	if len(res.Errs) > 0 {
		head := fmt.Sprintf("cannot lock %s; the lock file was not changed:", file)
		if opts.Check || opts.ReadOnly {
			// A check writes nothing anyway: say what could not be checked.
			flag := "--check"
			if !opts.Check {
				flag = "--readonly"
			}
			head = fmt.Sprintf("cannot check %s against %s (lock %s writes nothing): probing the toolbox failed:", manifest.LockPath(file), file, flag)
		}
		return errors.New(joinErrs(head, res.Errs))
	}
	data, err := manifest.Marshal(res.Lock)
	if err != nil {
		return err
	}
	path := manifest.LockPath(file)
	rep := lockReport{Lock: path, Changes: []string{}, probeReport: buildProbeReport(res)}
	if opts.Check || opts.ReadOnly {
		changes, err := checkDrift(opts, path, res.Lock, data)
		if changes != nil {
			rep.Changes = changes
		}
		if opts.JSON {
			if werr := cli.WriteJSON(opts.IO.Out, rep); werr != nil {
				return werr
			}
		}
		var ce *cli.CodeError
		if opts.ReadOnly && errors.As(err, &ce) {
			return fmt.Errorf("--readonly: the lock would change: %w", ce.Err)
		}
		return err
	}
	if err := manifest.Write(path, res.Lock); err != nil {
		return err
	}
	rep.Written = true
	if opts.JSON {
		if err := cli.WriteJSON(opts.IO.Out, rep); err != nil {
			return err
		}
	} else {
		printLockSummary(opts, res, path)
		warnWorkspaceRefusals(opts, path, res.Lock)
	}
	if name := requiredWithoutBackend(res.Lock); name != "" {
		return cli.WithCode(cli.ExitUsage, fmt.Errorf("%s was written, but %w", path, requiredError(name)))
	}
	return nil
}

// progress prints one line per tool as its probes finish: "[3/18] name:
// status (mechanism, 120ms)". Only for a terminal: a log stays as it was.
func progress(w io.Writer, total int) func(*compiler.ToolReport) {
	done := 0
	return func(r *compiler.ToolReport) {
		done++
		how := r.Duration.Round(time.Millisecond).String()
		if r.Mechanism != "" {
			how = r.Mechanism + ", " + how
		}
		fmt.Fprintf(w, "[%d/%d] %s: %s (%s)\n", done, total, r.Name, r.Status, how)
	}
}

// checkDrift compares what lock would write with the lock on disk; it
// returns what changed (nil when up to date) and the error of --check.
func checkDrift(opts *LockOptions, path string, lock *manifest.Lock, data []byte) ([]string, error) {
	_, changes, err := manifest.ReadDiskLock(path).Drift(lock, data)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{"no lock file"}, cli.WithCode(cli.ExitDrift, fmt.Errorf("%s does not exist; run `toolbox lock` and commit it", path))
	}
	if err != nil {
		return nil, err
	}
	if changes == nil {
		if !opts.JSON {
			fmt.Fprintf(opts.IO.Err, "%s is up to date\n", path)
		}
		return nil, nil
	}
	msg := fmt.Sprintf("%s is out of date; run `toolbox lock`:\n  %s", path, strings.Join(changes, "\n  "))
	return changes, cli.WithCode(cli.ExitDrift, errors.New(msg))
}

func printLockSummary(opts *LockOptions, res *compiler.Result, path string) {
	w := opts.IO.Err
	for _, c := range res.Capabilities {
		active := c.Active
		if active == "" {
			active = "none"
			if c.Required {
				active += " (required!)"
			}
		}
		fmt.Fprintf(w, "capability %s: active backend %s\n", c.Name, active)
	}
	for _, name := range cli.SortedKeys(res.Tools) {
		r := res.Tools[name]
		if r.Status == manifest.StatusFailed {
			line := fmt.Sprintf("tool %s: check failed: %s", name, r.Detail)
			if r.Fix != "" {
				line += " (fix: " + r.Fix + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	if pb := res.Lock.Process; pb != nil {
		if pb.Unconfined {
			fmt.Fprintln(w, `builtin "process": background commands run unconfined (unconfined = true)`)
		} else {
			fmt.Fprintf(w, "builtin \"process\": background commands run under %s (net %s, tmp %s)\n", pb.Mechanism, pb.Sandbox.Net, pb.Sandbox.Tmp)
		}
	}
	if b := res.Lock.Bwrap; b != nil {
		fmt.Fprintf(w, "pinned bwrap %s (sha256 %.12s): runs use this file, whatever PATH says\n", b.Path, b.SHA256)
	}
	fmt.Fprintf(w, "locked %s and %s in %s\n", cli.Plural(len(res.Lock.Tools), "tool"), cli.PluralOf(len(res.Lock.Capabilities), "capability", "capabilities"), path)
}

func joinErrs(head string, errs []error) string {
	var b strings.Builder
	b.WriteString(head)
	for _, e := range errs {
		for _, line := range strings.Split(e.Error(), "\n") {
			b.WriteString("\n  ")
			b.WriteString(line)
		}
	}
	return b.String()
}

// warnWorkspaceRefusals warns, after a lock of a toolbox file that sets a
// default workspace, about each tool, MCP server and the builtin "process"
// that a run on that workspace would refuse (a landlock write grant over
// a workspace holding the toolbox, say), with the fix. The workspace is
// chosen per call and never locked, so the lock stands; the operator who
// set one learns now, not at the first call (check --probe has the whole
// report).
func warnWorkspaceRefusals(opts *LockOptions, path string, l *manifest.Lock) {
	if l.Workspace == "" {
		return
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	xo := exposure.Options{StateDir: opts.StateDirInUse(), CallerEnv: os.Environ()}
	trust := exposure.Trust(abs, l, xo)
	if trust.WorkspaceErr != nil {
		fmt.Fprintf(opts.IO.Err, "warning: runs without --workspace will be refused: %v\n", trust.WorkspaceErr)
		return
	}
	entries := append(exposure.Tools(abs, l, xo), exposure.MCPServers(abs, l, xo)...)
	if e := exposure.Process(abs, l, xo); e != nil {
		e.Name = `builtin "process"`
		entries = append(entries, *e)
	}
	for _, e := range entries {
		if e.Refused == "" {
			continue
		}
		why := strings.TrimPrefix(e.Refused, e.Name+": ") // a block's refusal names it
		line := fmt.Sprintf("warning: on the workspace %s, a run of %s would be refused: %s", trust.Workspace, e.Name, why)
		if e.Fix != "" && !strings.Contains(e.Refused, e.Fix) {
			line += "; " + e.Fix
		}
		fmt.Fprintln(opts.IO.Err, line)
	}
}
