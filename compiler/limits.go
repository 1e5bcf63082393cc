package compiler

import (
	"errors"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// The limits block (DESIGN.md §3): toolbox-wide at the top level, and
// inside a tool, plugin, tools or builtin "process" block to override it
// attribute by attribute for those tools:
//
//	limits {
//	  memory      = "512MiB"   # RLIMIT_DATA per process; memory.max per call with cgroup v2
//	  file_size   = "1GiB"     # RLIMIT_FSIZE: the largest file the tool can write
//	  open_files  = 1024       # RLIMIT_NOFILE per process
//	  cpu_seconds = 600        # RLIMIT_CPU per process
//	  processes   = 256        # processes and threads of the tool (cgroup pids.max, ...)
//	  tmp_size    = "64MiB"    # each tmpfs bwrap mounts (/, a private /tmp, /dev/shm)
//	}
//
// The toolbox-wide tmp_size also sizes the toolbox's shared tmp, the
// tmpfs all its tools with tmp: shared write into (DESIGN.md §6, D6;
// Lock.SharedTmpSize); a tool's own tmp_size sizes only its own mounts.
//
// Sizes are a whole number of bytes, or a string of one with a unit KiB,
// MiB, GiB or TiB. Every attribute also takes "unlimited". 0 is an error:
// it reads as "no limit" to some and "nothing allowed" to others.

// Defaults of the limits (DESIGN.md §3): generous for git, ripgrep, go
// test and the like, small enough that no tool writes 1 GiB into its /tmp,
// its root or a single file, or forks without bound.
const (
	DefaultMemory    = 4 << 30
	DefaultFileSize  = 256 << 20
	DefaultOpenFiles = 4096
	DefaultProcesses = 4096
	DefaultTmpSize   = manifest.DefaultSharedTmpSize
	// DefaultCPUSeconds is 0, unlimited: RLIMIT_CPU counts a process's
	// whole life, so any value would one day kill a healthy service or
	// stream tool; one-shot calls are bounded by their timeout.
	DefaultCPUSeconds = 0
)

// Upper bounds: the kernel's default nr_open and the largest pid_max.
// Sizes and CPU seconds stop far below 2^64: the kernel reads a resource
// limit of 2^64-1 as RLIM_INFINITY and rounds a tmpfs size up to whole
// pages, so a value near 2^64 would silently mean no limit at all.
const (
	maxOpenFiles  = 1 << 20
	maxProcesses  = 1 << 22
	maxSize       = 1 << 50 // 1 PiB
	maxCPUSeconds = 1 << 40 // about 35,000 years
)

var limitsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "memory"}, {Name: "file_size"}, {Name: "open_files"},
		{Name: "cpu_seconds"}, {Name: "processes"}, {Name: "tmp_size"},
	},
}

// LimitsDecl is one limits block; a nil field is not set by the block.
type LimitsDecl struct {
	Memory, FileSize, OpenFiles, CPUSeconds, Processes, TmpSize *LimitValue
	Range                                                       hcl.Range
}

// LimitValue is one attribute of a limits block: Value is bytes (sizes) or
// a count, 0 for "unlimited"; Range locates the value.
type LimitValue struct {
	Value uint64
	Range hcl.Range
}

// limitsBlock reads the limits block among blocks (nil when there is
// none); a second one is an error pointing at the first. ok is false when
// a diagnostic was added.
func (l *loader) limitsBlock(blocks hcl.Blocks, block string) (*LimitsDecl, bool) {
	where := "limits"
	if block != "" {
		where = block + ", limits"
	}
	var d *LimitsDecl
	ok := true
	for _, b := range blocks {
		if b.Type != "limits" {
			continue
		}
		if d != nil {
			r := d.Range
			l.add(at(b.DefRange, where, fmt.Sprintf("duplicate limits block, first declared at %s:%d:%d", r.Filename, r.Start.Line, r.Start.Column), "merge them into one limits block"))
			ok = false
			continue
		}
		d = &LimitsDecl{Range: b.DefRange}
		c, hd := b.Body.Content(limitsSchema)
		if hd.HasErrors() { // unknown attributes: the known ones are still checked
			l.diags = append(l.diags, fromHCL(hd, where)...)
			ok = false
		}
		for _, f := range []struct {
			name string
			dst  **LimitValue
			size bool
			min  uint64
			max  limitMax
		}{
			{"memory", &d.Memory, true, sandbox.MinMemory, wrapMax(maxSize)},
			{"file_size", &d.FileSize, true, 1, wrapMax(maxSize)},
			{"open_files", &d.OpenFiles, false, sandbox.MinOpenFiles, limitMax{maxOpenFiles, "the most the kernel allows"}},
			{"cpu_seconds", &d.CPUSeconds, false, 1, wrapMax(maxCPUSeconds)},
			{"processes", &d.Processes, false, 1, limitMax{maxProcesses, "the most the kernel allows"}},
			{"tmp_size", &d.TmpSize, true, 4096, wrapMax(maxSize)},
		} {
			a := c.Attributes[f.name]
			if a == nil {
				continue
			}
			v, vok := l.limitValue(a, where, f.size, f.min, f.max)
			if !vok {
				ok = false
				continue
			}
			*f.dst = &LimitValue{Value: v, Range: a.Expr.Range()}
		}
	}
	return d, ok
}

// limitMax is a limit's largest value and why, as its error says it.
type limitMax struct {
	n   uint64
	why string
}

// wrapMax is a bound set below 2^64 only because values near it would
// wrap to no limit (see maxSize).
func wrapMax(n uint64) limitMax {
	return limitMax{n, "the most a limit can be (higher values would wrap to no limit)"}
}

// limitValue reads one limit: a whole number, a size string (when size),
// or "unlimited" (0). It must lie in [min, max.n].
func (l *loader) limitValue(a *hcl.Attribute, where string, size bool, min uint64, max limitMax) (uint64, bool) {
	v, ok := l.value(a, where)
	if !ok {
		return 0, false
	}
	form := `write a whole number, or "unlimited"`
	if size {
		form = `write a whole number of bytes, a string such as "512MiB" (units KiB, MiB, GiB, TiB), or "unlimited"`
	}
	bad := func(msg string) (uint64, bool) {
		l.add(at(a.Expr.Range(), where, fmt.Sprintf("%s: %s", a.Name, msg), form))
		return 0, false
	}
	var n uint64
	switch v.Type() {
	case cty.Number:
		bf := v.AsBigFloat()
		if !bf.IsInt() || bf.Sign() < 0 {
			return bad(fmt.Sprintf("%s is not a whole number", bf.Text('g', -1)))
		}
		i, acc := bf.Uint64()
		if acc != big.Exact {
			return bad(fmt.Sprintf("%s is too large", bf.Text('g', -1)))
		}
		n = i
	case cty.String:
		s := strings.TrimSpace(v.AsString())
		if s == "unlimited" {
			return 0, true
		}
		if !size {
			return bad(fmt.Sprintf("%q is not a number", v.AsString()))
		}
		var err error
		if n, err = ParseSize(s); err != nil {
			return bad(err.Error())
		}
	default:
		return bad(fmt.Sprintf("got %s", v.Type().FriendlyName()))
	}
	switch {
	case n == 0:
		l.add(at(a.Expr.Range(), where, fmt.Sprintf("%s: 0 is not a limit", a.Name), `write "unlimited" for no limit, or a positive value`))
		return 0, false
	case n < min:
		l.add(at(a.Expr.Range(), where, fmt.Sprintf("%s: %s is below the least this program accepts, %s", a.Name, showLimit(n, size), showLimit(min, size)),
			fmt.Sprintf("write %s or more (see the README's limits)", showLimit(min, size))))
		return 0, false
	case n > max.n:
		l.add(at(a.Expr.Range(), where, fmt.Sprintf("%s: %s is above %s, %s", a.Name, showLimit(n, size), showLimit(max.n, size), max.why), fmt.Sprintf("write %s or less, or \"unlimited\"", showLimit(max.n, size))))
		return 0, false
	}
	return n, true
}

func showLimit(n uint64, size bool) string {
	if size {
		return sandbox.FormatSize(n)
	}
	return strconv.FormatUint(n, 10)
}

// ParseSize reads a size: a whole number of bytes with an optional unit
// B, KiB, MiB, GiB or TiB (powers of 1024), e.g. "512MiB" or "1 GiB".
// Decimal units (KB, MB, ...) and fractions are refused, naming the
// accepted form.
func ParseSize(s string) (uint64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	switch {
	case num == "":
		return 0, fmt.Errorf("%q is not a size", s)
	case strings.HasPrefix(unit, ".") || strings.HasPrefix(unit, ","):
		return 0, fmt.Errorf("%q is not a whole number (write 1536MiB, not 1.5GiB)", s)
	}
	shifts := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}
	shift, ok := shifts[unit]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit %q (sizes use KiB, MiB, GiB, TiB: powers of 1024, whole numbers)", s, unit)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n > (1<<63-1)>>shift {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n << shift, nil
}

// sharedTmpSize is the lock's SharedTmpSize: the toolbox-wide limits
// block's tmp_size (0 for "unlimited"), nil when it sets none (the lock's
// default, manifest.DefaultSharedTmpSize, which is DefaultTmpSize).
func sharedTmpSize(cfg *Config) *uint64 {
	if cfg.Limits == nil || cfg.Limits.TmpSize == nil {
		return nil
	}
	v := cfg.Limits.TmpSize.Value
	return &v
}

// DefaultLimits returns the limits a tool gets where no limits block sets
// one (see the Default* constants).
func DefaultLimits() manifest.Limits {
	return manifest.Limits{
		MemoryBytes: DefaultMemory, FileSizeBytes: DefaultFileSize, OpenFiles: DefaultOpenFiles,
		CPUSeconds: DefaultCPUSeconds, Processes: DefaultProcesses, TmpSizeBytes: DefaultTmpSize,
	}
}

// resolvedLimits is a tool's limits and where the processes limit came
// from (nil: the default).
type resolvedLimits struct {
	limits    manifest.Limits
	processes *LimitValue
}

// resolveLimits takes each attribute from the first of decls that sets it
// (the tool's block, then the toolbox's), else the default.
func resolveLimits(decls ...*LimitsDecl) resolvedLimits {
	r := resolvedLimits{limits: DefaultLimits()}
	pick := func(dst *uint64, get func(*LimitsDecl) *LimitValue) *LimitValue {
		for _, d := range decls {
			if d == nil {
				continue
			}
			if v := get(d); v != nil {
				*dst = v.Value
				return v
			}
		}
		return nil
	}
	l := &r.limits
	pick(&l.MemoryBytes, func(d *LimitsDecl) *LimitValue { return d.Memory })
	pick(&l.FileSizeBytes, func(d *LimitsDecl) *LimitValue { return d.FileSize })
	pick(&l.OpenFiles, func(d *LimitsDecl) *LimitValue { return d.OpenFiles })
	pick(&l.CPUSeconds, func(d *LimitsDecl) *LimitValue { return d.CPUSeconds })
	r.processes = pick(&l.Processes, func(d *LimitsDecl) *LimitValue { return d.Processes })
	pick(&l.TmpSizeBytes, func(d *LimitsDecl) *LimitValue { return d.TmpSize })
	return r
}

// enforceable makes r hold on this machine for a tool (named tool, "" for
// a builtin) of block running as uid under mechanism m: a processes limit
// the operator set that nothing here can count is an error located at it,
// carrying the *sandbox.RefusalError. The default processes limit is
// locked as manifest.Limits.ProcessesDefault whatever this machine can
// count (each start applies it where the processes can be counted), so
// that the lock does not depend on who makes it: root, another user, a
// host with a delegated cgroup (DESIGN.md §4, a lock is portable). nil
// means no limit at all.
func (r resolvedLimits) enforceable(m string, uid uint32, tool, block string) (*manifest.Limits, error) {
	l := r.limits
	asked := runspec.Limits(&l)
	if r.processes == nil && l.Processes != 0 {
		l.ProcessesDefault = true
		asked.Processes = 0
	}
	refusal := sandbox.LimitsRefusal(asked, sandbox.Mechanism(m), uid, sandbox.DetectCgroup())
	if refusal != nil {
		d := &Diagnostic{Block: block, Msg: refusal.Error(), Fix: refusal.Fix, Err: refusal}
		refusal.Tool = tool // after the message: the block already names it
		if r.processes != nil {
			d.File, d.Line, d.Col = r.processes.Range.Filename, r.processes.Range.Start.Line, r.processes.Range.Start.Column
		}
		return nil, d
	}
	if l == (manifest.Limits{}) {
		return nil, nil
	}
	return &l, nil
}

// toolLimits resolves t's limits for its locked runtime rt.
func (p *prober) toolLimits(t *ToolDecl, rt manifest.Runtime) (*manifest.Limits, error) {
	uid := uint32(os.Geteuid())
	if rt.RunAs != nil {
		uid = rt.RunAs.UID
	}
	l, err := resolveLimits(t.Limits, p.cfg.Limits).enforceable(rt.Mechanism, uid, t.Name, t.Block)
	var d *Diagnostic
	if errors.As(err, &d) && d.File == "" {
		d.File, d.Line, d.Col = t.Range.Filename, t.Range.Start.Line, t.Range.Start.Column
	}
	return l, err
}

// withDescribeLimits gives spec (nil: none) t's limits for describe.
func (p *prober) withDescribeLimits(t *ToolDecl, spec *sandbox.Spec) *sandbox.Spec {
	if spec == nil {
		spec = &sandbox.Spec{Mechanism: sandbox.None}
	}
	spec.Limits = p.describeLimits(t, spec.Mechanism)
	return spec
}

// describeLimits are t's limits for `TOOL describe` under mechanism m (as
// toolbox's user): the tool's own, less a processes limit nothing counts.
func (p *prober) describeLimits(t *ToolDecl, m sandbox.Mechanism) sandbox.Limits {
	r := resolveLimits(t.Limits, p.cfg.Limits)
	l := runspec.Limits(&r.limits)
	if sandbox.LimitsRefusal(l, m, uint32(os.Geteuid()), sandbox.DetectCgroup()) != nil {
		l.Processes = 0
	}
	return l
}

// builtinLimits resolves the limits of each declared builtin's commands
// (they run under none, as toolbox's user).
func builtinLimits(cfg *Config) (map[string]*manifest.Limits, []error) {
	var out map[string]*manifest.Limits
	var errs []error
	for _, name := range cfg.Builtins {
		who := fmt.Sprintf("builtin %q", name)
		l, err := resolveLimits(cfg.BuiltinLimits[name], cfg.Limits).enforceable(string(sandbox.None), uint32(os.Geteuid()), "", who)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if l != nil {
			if out == nil {
				out = map[string]*manifest.Limits{}
			}
			out[name] = l
		}
	}
	return out, errs
}
