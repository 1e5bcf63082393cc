package compiler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/probe"
	"github.com/toolbox-dev/toolbox/probe/pluginprobe"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Defaults of Options.
const (
	DefaultParallel        = 16
	DefaultDescribeTimeout = 10 * time.Second
	DefaultCheckTimeout    = 30 * time.Second
)

// Options tune Compile. The zero value is usable.
type Options struct {
	// Sandbox overrides the toolbox file's mechanism (--sandbox); "" keeps it.
	Sandbox string
	// Parallel bounds how many tools are probed at once (0 = DefaultParallel).
	Parallel int
	// DescribeTimeout and CheckTimeout bound each probe (0 = the defaults).
	DescribeTimeout time.Duration
	CheckTimeout    time.Duration
	// CallerEnv is the environment of the caller (tools that declare no
	// sandbox see it during check, as they will at run time).
	CallerEnv []string
	// OnProbe, when set, is called with each tool's report as soon as its
	// probes finish (progress on a terminal), one call at a time, in the
	// order the probes finish; an MCP server gets one call (Kind
	// KindMCPServer, Detail counting its tools), not one per tool.
	OnProbe func(*ToolReport)
	// StateDir is the state directory toolbox uses ("" = none known): a
	// tool whose sandbox would reach it is refused (DESIGN.md §6).
	StateDir string
	// Workspace is the workspace checks run on (check --probe
	// --workspace). The zero value, what lock uses, is a private empty
	// directory made for the compile: a lock never depends on a project
	// (see probeWorkspace).
	Workspace runspec.Workspace
}

// ToolReport is what probing found about one tool, or about an MCP
// server that could not be locked (Kind KindMCPServer).
type ToolReport struct {
	Name string
	// Kind is KindExec, KindPlugin, manifest.KindMCP or KindMCPServer.
	Kind string
	// Status is a manifest.Status* value; StatusSkipped when the sandbox
	// mechanism cannot honour what the tool declared.
	Status    string
	Detail    string
	Fix       string
	Mechanism string
	// Limits are the tool's resolved limits (nil: none, or not locked).
	Limits *manifest.Limits
	// Duration is how long describe and check took together.
	Duration time.Duration
	// Err is why the tool cannot be locked (nil when it can): describe
	// failed or was invalid, or the sandbox refused it.
	Err error
}

// CapabilityReport is a capability's resolution.
type CapabilityReport struct {
	Name     string
	Required bool
	Active   string
	Backends []string
}

// Result is the outcome of Compile.
type Result struct {
	// Lock is nil when Errs is not empty.
	Lock *manifest.Lock
	// Draft is the lock as far as it was built: the tools that could be
	// locked (and the builtin "process" when it resolved). It is Lock when
	// Errs is empty. For reports (check --probe's exposure), never to be
	// written.
	Draft *manifest.Lock
	// Tools holds every tool of the file, rejected ones included.
	Tools        map[string]*ToolReport
	Capabilities []CapabilityReport
	// Errs lists every reason the toolbox cannot be locked.
	Errs []error
}

// Compile probes every tool of cfg in parallel and builds the lock. It
// never stops at the first problem: every rejected tool is in Errs with its
// reason, and Tools reports each tool's status.
func Compile(ctx context.Context, cfg *Config, opts Options) *Result {
	if opts.Parallel <= 0 {
		opts.Parallel = DefaultParallel
	}
	if opts.DescribeTimeout <= 0 {
		opts.DescribeTimeout = DefaultDescribeTimeout
	}
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = DefaultCheckTimeout
	}
	mech := cfg.Sandbox
	if opts.Sandbox != "" {
		mech = opts.Sandbox
	}
	lock := manifest.New()
	lock.Sandbox, lock.EnvdirRoot, lock.EnvAllowlist, lock.Builtins = mech, cfg.EnvdirRoot, cfg.EnvAllowlist, cfg.Builtins
	lock.Workspace = cfg.Workspace
	lock.SharedTmpSize = sharedTmpSize(cfg)
	lock.File = manifest.FileRef{Path: filepath.Base(cfg.Path), SHA256: sha256Hex(cfg.Source), Config: cfg.Digest}
	var limitErrs []error
	lock.BuiltinLimits, limitErrs = builtinLimits(cfg)

	p := &prober{cfg: cfg, opts: opts, mechanism: mech, lock: lock}
	p.trust = lockTrust(cfg, mech, opts.StateDir)
	p.trust.SharedTmpSize = lock.SharedTmpBytes()
	cleanup, wsErr := p.probeWorkspace()
	defer cleanup()
	if wsErr != nil {
		return &Result{Tools: map[string]*ToolReport{}, Errs: []error{wsErr}}
	}
	reports := make([]*ToolReport, len(cfg.Tools))
	locked := make([]*manifest.Tool, len(cfg.Tools))
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	var progress sync.Mutex
	// spawn runs one probe (a tool or an MCP server) under the
	// parallelism limit and reports its result to OnProbe.
	spawn := func(probe func() *ToolReport) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			report := probe()
			if opts.OnProbe != nil {
				progress.Lock()
				opts.OnProbe(report)
				progress.Unlock()
			}
		}()
	}
	for i, t := range cfg.Tools {
		spawn(func() *ToolReport {
			locked[i], reports[i] = p.probe(ctx, t)
			return reports[i]
		})
	}
	servers := make([]mcpLocked, len(cfg.MCPServers))
	for i, d := range cfg.MCPServers {
		spawn(func() *ToolReport {
			servers[i] = p.lockMCPServer(ctx, d)
			return servers[i].report
		})
	}
	wg.Wait()

	res := &Result{Tools: map[string]*ToolReport{}, Errs: limitErrs}
	for i, t := range cfg.Tools {
		res.Tools[t.Name] = reports[i]
		if reports[i].Err != nil {
			res.Errs = append(res.Errs, reports[i].Err)
			continue
		}
		expand(t.Name, locked[i], reports[i], lock.Tools, res.Tools)
	}
	addMCPServers(cfg, servers, lock, res)
	res.Errs = append(res.Errs, checkNames(cfg, lock)...)
	if proc, err := resolveProcess(cfg, mech); err != nil {
		res.Errs = append(res.Errs, err)
	} else {
		lock.Process = proc
	}
	usesBwrap := lock.Process != nil && lock.Process.Mechanism == string(sandbox.Bwrap)
	for _, t := range lock.Tools {
		usesBwrap = usesBwrap || t.Runtime.Mechanism == string(sandbox.Bwrap)
	}
	for _, s := range lock.MCPServers {
		usesBwrap = usesBwrap || s.Mechanism == string(sandbox.Bwrap)
	}
	if usesBwrap && p.trust.Bwrap != nil {
		// Tools, MCP servers and background commands run exactly this
		// bwrap.
		lock.Bwrap = &manifest.Pin{Path: p.trust.Bwrap.Path, SHA256: p.trust.Bwrap.SHA256}
	}
	for _, cp := range cfg.Capabilities {
		lc, errs := resolveCapability(cp, lock.Tools, res.Tools)
		res.Errs = append(res.Errs, errs...)
		lock.Capabilities[cp.Name] = lc
		res.Capabilities = append(res.Capabilities, CapabilityReport{Name: cp.Name, Required: cp.Required, Active: lc.Active, Backends: lc.Backends})
	}
	checkMCPBackends(cfg, lock, res)
	res.Draft = lock
	if len(res.Errs) == 0 {
		res.Lock = lock
	}
	return res
}

// resolveCapability checks that all backends declare the same args and
// picks the active one: the first ok, else the first unverified, else none.
func resolveCapability(cp *CapabilityDecl, tools map[string]*manifest.Tool, reports map[string]*ToolReport) (*manifest.Capability, []error) {
	lc := &manifest.Capability{Description: cp.Description, Backends: cp.Backends, Required: cp.Required, FallbackOn: cp.FallbackOn}
	var errs []error
	block := fmt.Sprintf("capability %q", cp.Name)
	first := ""
	for _, b := range cp.Backends {
		t := tools[b]
		if t == nil {
			if owner := commandOwner(b); owner != "" && reports[owner] != nil && reports[owner].Err == nil {
				errs = append(errs, at(cp.BackendRange, block, fmt.Sprintf("backend %q: tool %q has no command %q", b, owner, b[len(owner)+1:]), "name one of the commands its describe document lists"))
			}
			continue
		}
		if first == "" {
			first = b
			continue
		}
		if msg, fix := backendsDiffer(first, tools[first], b, t); msg != "" {
			errs = append(errs, at(cp.BackendRange, block, msg, fix))
		}
	}
	if order := lc.UsableBackends(tools); len(order) > 0 {
		lc.Active = order[0]
	}
	return lc, errs
}

// argsDiffer compares what the model sees of two arg lists and names the
// first difference, or returns "".
func argsDiffer(an string, a []protocol.Arg, bn string, b []protocol.Arg) string {
	index := func(args []protocol.Arg) map[string]protocol.Arg {
		m := map[string]protocol.Arg{}
		for _, x := range args {
			m[x.Name] = x
		}
		return m
	}
	am, bm := index(a), index(b)
	names := map[string]bool{}
	for n := range am {
		names[n] = true
	}
	for n := range bm {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		x, inA := am[n]
		y, inB := bm[n]
		switch {
		case !inA:
			return fmt.Sprintf("backends %q and %q declare different args: %q has arg %q, %q does not", an, bn, bn, n, an)
		case !inB:
			return fmt.Sprintf("backends %q and %q declare different args: %q has arg %q, %q does not", an, bn, an, n, bn)
		case x.BackingType != y.BackingType:
			return fmt.Sprintf("backends %q and %q declare different args: arg %q is %s in %q and %s in %q", an, bn, n, x.BackingType, an, y.BackingType, bn)
		case x.Arity != y.Arity:
			return fmt.Sprintf("backends %q and %q declare different args: arg %q is %s in %q and %s in %q", an, bn, n, x.Arity, an, y.Arity, bn)
		}
	}
	return ""
}

type prober struct {
	cfg       *Config
	opts      Options
	mechanism string
	lock      *manifest.Lock
	trust     *runspec.Trust // what the lock will protect, and the bwrap it pins
	// private: the workspace is the compile's own empty directory, where
	// the paths a tool declares below the workspace may be created.
	private bool
}

// probe describes, resolves the runtime of, and checks one tool.
func (p *prober) probe(ctx context.Context, t *ToolDecl) (*manifest.Tool, *ToolReport) {
	start := time.Now()
	r := &ToolReport{Name: t.Name, Kind: t.Kind}
	lt, err := p.lockTool(ctx, t, r)
	r.Duration = time.Since(start)
	if err != nil {
		r.Err = err
		if r.Status == "" {
			r.Status = manifest.StatusFailed
		}
		if r.Detail == "" {
			r.Detail = err.Error()
		}
		return nil, r
	}
	r.Status, r.Detail, r.Fix = lt.Probe.Status, lt.Probe.Detail, lt.Probe.Fix
	r.Limits = lt.Runtime.Limits
	return lt, r
}

func (p *prober) lockTool(ctx context.Context, t *ToolDecl, r *ToolReport) (*manifest.Tool, error) {
	fail := func(msg, fix string) error {
		return &Diagnostic{File: t.Range.Filename, Line: t.Range.Start.Line, Col: t.Range.Start.Column, Block: t.Block, Msg: msg, Fix: fix}
	}
	// Opened once: what is hashed is what describe runs.
	exe, err := sandbox.OpenExecutable(t.Path)
	if err != nil {
		var refusal *sandbox.RefusalError
		if errors.As(err, &refusal) {
			return nil, fail(err.Error(), refusal.Fix)
		}
		return nil, fail(fmt.Sprintf("opening the binary: %v", err), "check the path and its permissions")
	}
	defer exe.Close()
	rel, err := filepath.Rel(p.cfg.Dir, t.Path)
	if err != nil {
		rel = t.Path
	}
	lt := &manifest.Tool{Kind: t.Kind, Path: filepath.ToSlash(rel), SHA256: exe.SHA256(), Platform: manifest.Platform()}

	// describe runs before the tool's declarations are known, so it gets
	// the strictest confinement the mechanism offers.
	dspec, err := p.describeSpec(t)
	if err != nil {
		var rf *sandbox.RefusalError
		if errors.As(err, &rf) {
			r.Mechanism = string(rf.Mechanism)
		}
		r.Status = manifest.StatusSkipped
		return nil, refusal(t, err)
	}
	spec := p.withDescribeLimits(t, dspec)
	home, removeHome, err := privateHome(spec)
	if err != nil {
		return nil, fail(err.Error(), "check that the temporary directory ($TMPDIR, else /tmp) is writable")
	}
	defer removeHome()
	var d *protocol.Describe
	if t.Kind == KindPlugin {
		if d, lt.PluginProtocol, err = p.describePlugin(ctx, t, exe, spec, p.describeEnv(home)); err != nil {
			return nil, fail(err.Error(), "`toolbox describe` the plugin; it must be built with plugins/sdk and print nothing before its handshake")
		}
	} else {
		c, err := probe.Capture(ctx, spec, sandbox.Command{Path: t.Path, Exe: exe, Args: []string{"describe"}, Env: p.describeEnv(home)}, p.opts.DescribeTimeout)
		if err != nil {
			return nil, fail(fmt.Sprintf("running describe: %v", err), "check that the tool is executable on this machine")
		}
		if f := c.Failure("describe", p.opts.DescribeTimeout); f != nil {
			if c.Code != 0 && strings.Contains(c.Stderr, goPluginBanner) {
				rel := t.Path
				if r, err := filepath.Rel(p.cfg.Dir, t.Path); err == nil {
					rel = filepath.ToSlash(r)
				}
				return nil, fail("describe: the binary is a Go plugin (hashicorp/go-plugin), not an executable tool",
					fmt.Sprintf("declare it with a plugin block: plugin %q { path = %q }", t.Name, rel))
			}
			fix := "`TOOL describe` must print its JSON describe document and exit 0"
			if c.Code == 126 || c.Code == 127 {
				fix = describeExecFix(spec, c.Code, envValue(p.describeEnv(home), "PATH"))
			}
			return nil, fail(f.Error(), fix)
		}
		if d, err = validate.ParseDescribe(c.Stdout); err != nil {
			return nil, fail(fmt.Sprintf("invalid describe document: %v", err), "fix the tool's describe output (DESIGN.md §2)")
		}
	}
	lt.Describe = d
	lt.Protocol = d.EffectiveProtocol()
	if lt.Bindings, err = lockBindings(t, d); err != nil {
		return nil, err
	}
	if err := checkSend(t, d); err != nil {
		return nil, err
	}
	lt.OmitSend = t.OmitSend

	p.makeWorkspacePaths(d)
	rt, err := p.resolveRuntime(t, d)
	if err == nil {
		rt.Limits, err = p.toolLimits(t, rt)
	}
	if err != nil {
		var refusal *sandbox.RefusalError
		if errors.As(err, &refusal) {
			r.Status = manifest.StatusSkipped
			r.Mechanism = string(refusal.Mechanism)
		}
		return nil, err
	}
	lt.Runtime = rt
	r.Mechanism = rt.Mechanism
	if err := p.checkConfinement(t, lt); err != nil {
		r.Status, r.Mechanism = manifest.StatusSkipped, rt.Mechanism
		return nil, err
	}

	if !d.Check {
		lt.Probe = manifest.Probe{Status: manifest.StatusUnverified, Detail: "the tool declares no check"}
		return lt, nil
	}
	lt.Probe = p.check(ctx, lt)
	return lt, nil
}

// goPluginBanner begins what a go-plugin binary prints on stderr when it
// is run without a host (as a tool block's describe runs it).
const goPluginBanner = "This binary is a plugin. These are not meant to be executed directly."

// check runs `TOOL check` under the tool's real runtime.
func (p *prober) check(ctx context.Context, lt *manifest.Tool) manifest.Probe {
	return probe.Check(ctx, p.cfg.Dir, lt, p.trust, p.cfg.EnvAllowlist, p.opts.CallerEnv, p.opts.CheckTimeout, pluginprobe.Check)
}

// describeEnv is the environment of describe: only PATH (the caller's,
// else defaultPath), LANG and HOME (a private empty directory, see
// privateHome), since describe must be a static document.
func (p *prober) describeEnv(home string) []string {
	env := []string{"PATH=" + defaultPath, "LANG=C.UTF-8", "HOME=" + home}
	for _, kv := range p.opts.CallerEnv {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			env[0] = kv
		}
	}
	return env
}

const defaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// describeExecFix is the fix for a describe that could not execute a
// program (exit 126: not executable or not permitted, 127: not found):
// its interpreter (#! line) or a program it calls. Describe runs with the
// caller's PATH, under the strictest sandbox, which sees the system
// directories and the tool's own, not a PATH entry elsewhere (a CI
// runner's tool cache, a pyenv or nvm shim under $HOME): those entries
// are named, as the reason a program there is not found.
func describeExecFix(spec *sandbox.Spec, code int, path string) string {
	what := "found"
	if code == 126 {
		what = "executed"
	}
	if spec == nil || spec.Mechanism == "" || spec.Mechanism == sandbox.None {
		return fmt.Sprintf("a program describe runs (the tool's #! interpreter, or one it calls) was not %s with PATH=%s: install it, or run toolbox lock with a PATH that holds it", what, path)
	}
	var hidden []string
	for _, dir := range filepath.SplitList(path) {
		if !systemDir(dir) && !(spec.ToolDir != "" && (dir == spec.ToolDir || strings.HasPrefix(dir, spec.ToolDir+"/"))) {
			hidden = append(hidden, dir)
		}
	}
	msg := fmt.Sprintf("a program describe runs (the tool's #! interpreter, or one it calls) was not %s in its %s sandbox, which sees only the system directories (/usr, /bin, /sbin, /lib*) and the tool's own directory", what, spec.Mechanism)
	if len(hidden) > 0 {
		msg += fmt.Sprintf("; PATH has %s, which it does not see", strings.Join(hidden, ", "))
	}
	return msg + ": use a program installed under /usr (e.g. #!/usr/bin/env bash with /usr/bin on PATH, /usr/bin/python3 rather than a shim under $HOME), then run toolbox lock"
}

// systemDir reports whether dir is one a sandbox always shows (/usr and
// below, /bin, /sbin, /lib*).
func systemDir(dir string) bool {
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return false
}

// envValue is the value of name in env ("NAME=value" entries), "" if unset.
func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
