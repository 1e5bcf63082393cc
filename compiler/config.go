package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/toolbox-dev/toolbox/internal/shq"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// Config is a loaded, validated toolbox file (DESIGN.md §3).
type Config struct {
	// Path is the toolbox file as given to Load; Dir is its absolute directory
	// (the lock lives there, and relative paths are resolved against it).
	Path string
	Dir  string
	// Source is the file's bytes; their sha256 is in the lock, a fast path
	// for the check of a run.
	Source []byte
	// Digest is the digest of the parsed configuration (ConfigDigest): what
	// the lock pins, so that comments and layout need no new lock.
	Digest string
	// Sandbox is "bwrap", "landlock", "auto" or "none" ("none" when unset).
	Sandbox string
	// EnvdirRoot as written ("" = unset); relative to Dir unless absolute.
	EnvdirRoot string
	// Workspace is the default workspace (the workspace attribute), a
	// clean slash path relative to Dir unless absolute; "" when unset.
	Workspace string
	// EnvAllowlist is nil unless the file sets env_allowlist.
	EnvAllowlist []string
	// Tools in declaration order, `tools` directory sources expanded.
	Tools []*ToolDecl
	// Capabilities in declaration order.
	Capabilities []*CapabilityDecl
	// Builtins declared (e.g. "process"), sorted.
	Builtins []string
	// Process is the builtin "process" block, nil when there is none.
	Process *ProcessDecl
	// Limits is the toolbox-wide limits block (nil when absent), and
	// BuiltinLimits a builtin's own, by builtin name.
	Limits        *LimitsDecl
	BuiltinLimits map[string]*LimitsDecl
	// MCPServers are the mcp_server blocks in declaration order.
	MCPServers []*MCPServerDecl
	// Notes are non-fatal remarks (files a `tools` source did not take).
	Notes []string
}

// Tool kinds.
const (
	KindExec   = manifest.KindExec
	KindPlugin = manifest.KindPlugin
)

// ToolDecl is one tool of the toolbox file.
type ToolDecl struct {
	Name string
	// Kind is KindExec or KindPlugin.
	Kind string
	// Path is the binary's absolute path.
	Path string
	// Block names the declaring block for messages: `tool "x"` or `tools "dev"`.
	Block string
	Range hcl.Range
	// Timeout is the operator's default call timeout (0 = unset).
	Timeout time.Duration
	// AllowRunAs is false when the operator refuses a run_as declaration.
	AllowRunAs bool
	// Bindings are the operator's bound arguments (bind blocks), checked
	// against the describe document once the tool is probed.
	Bindings []*BindDecl
	// OmitSend is `send = false`: the service's <name>_send companion is
	// left out of what models see (the v2 spec's D6); checked once the
	// tool is described (it must be a service that declares process.input).
	OmitSend bool
	// SendRange locates the send attribute when it is set.
	SendRange hcl.Range
	// Concurrency is a plugin block's `concurrency` (0 = unset): how many
	// calls one warm process serves at once; see resolveConcurrency.
	Concurrency int
	// ConcurrencyRange locates it when it is set.
	ConcurrencyRange hcl.Range
	// Limits is the block's own limits block (nil when absent); it
	// overrides the toolbox-wide one attribute by attribute.
	Limits *LimitsDecl
}

// BindDecl is one `bind "arg" { value = ... | env = "VAR", secret = bool }`.
type BindDecl struct {
	Arg string
	// Value is the literal as JSON, nil when Env is set.
	Value  []byte
	Env    string
	Secret bool
	Range  hcl.Range
}

// CapabilityDecl is one capability block.
type CapabilityDecl struct {
	Name        string
	Description string
	Backends    []string
	Required    bool
	// FallbackOn are exit codes that move a call to the next backend.
	FallbackOn []int
	Range      hcl.Range
	// BackendRange locates the backends attribute.
	BackendRange hcl.Range
}

// Builtins this program knows.
var knownBuiltins = map[string]bool{"process": true}

var rootSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "sandbox"}, {Name: "envdir_root"}, {Name: "env_allowlist"}, {Name: "workspace"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "tool", LabelNames: []string{"name"}},
		{Type: "plugin", LabelNames: []string{"name"}},
		{Type: "tools", LabelNames: []string{"name"}},
		{Type: "capability", LabelNames: []string{"name"}},
		{Type: "builtin", LabelNames: []string{"name"}},
		{Type: "limits"},
		{Type: "mcp_server", LabelNames: []string{"name"}},
	},
}

var toolSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "path", Required: true}, {Name: "timeout"}, {Name: "allow_run_as"}, {Name: "send"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "bind", LabelNames: []string{"arg"}}, {Type: "limits"}},
}

var toolsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "dir", Required: true}, {Name: "filter"}, {Name: "timeout"}, {Name: "allow_run_as"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "limits"}},
}

var capabilitySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "backends", Required: true}, {Name: "required"}, {Name: "description"}, {Name: "fallback_on"}},
}

// Load reads and validates the toolbox file at path. It checks everything
// that can be checked without running a tool: syntax, known attributes and
// blocks, values, duplicate names, unknown backends, and that every tool's
// binary exists and is executable. The error, when not nil, is Diagnostics
// listing every problem found.
func Load(path string) (*Config, error) {
	src, err := ReadToolboxFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, Diagnostics{{File: path, Msg: err.Error()}}
	}
	cfg := &Config{Path: path, Dir: filepath.Dir(abs), Source: src, Sandbox: "none"}
	if ds := checkShape(src, path); ds != nil {
		return nil, ds
	}
	f, hd := hclparse.NewParser().ParseHCL(src, path)
	if hd.HasErrors() {
		return nil, fromHCL(hd, "")
	}
	content, hd := f.Body.Content(rootSchema)
	ds := fromHCL(hd, "")
	l := &loader{cfg: cfg, names: map[string]hcl.Range{}, toolNames: map[string]bool{}}
	l.diags = ds
	l.root(content)
	if len(l.diags) > 0 {
		return nil, l.diags
	}
	if cfg.Digest, err = digestOf(f); err != nil {
		return nil, Diagnostics{{File: path, Msg: err.Error()}}
	}
	return cfg, nil
}

type loader struct {
	cfg   *Config
	diags Diagnostics
	// names maps every tool and capability name to where it was declared.
	names map[string]hcl.Range
	// toolNames are the names declared by tool, plugin and tools blocks,
	// valid or not: a capability naming a tool whose block has an error
	// gets no second, misleading "unknown backend" error.
	toolNames map[string]bool
	// openNames: an mcp_server selects no tools, so a capability may name
	// any tool it lists; whether it does is known once it is probed.
	openNames bool
}

func (l *loader) add(d *Diagnostic) { l.diags = append(l.diags, d) }

func (l *loader) root(c *hcl.BodyContent) {
	if a := c.Attributes["sandbox"]; a != nil {
		if s, ok := l.str(a, ""); ok {
			switch s {
			case "bwrap", "landlock", "auto", "none":
				l.cfg.Sandbox = s
			default:
				l.add(at(a.Expr.Range(), "sandbox", fmt.Sprintf("unknown mechanism %q", s), `use "bwrap", "landlock", "auto" or "none"`))
			}
		}
	}
	if a := c.Attributes["envdir_root"]; a != nil {
		if s, ok := l.str(a, ""); ok {
			l.cfg.EnvdirRoot = s
		}
	}
	l.workspace(c.Attributes["workspace"])
	if a := c.Attributes["env_allowlist"]; a != nil {
		if list, ok := l.strList(a, "env_allowlist"); ok {
			if list == nil {
				list = []string{}
			}
			l.cfg.EnvAllowlist = list
		}
	}
	l.cfg.Limits, _ = l.limitsBlock(c.Blocks, "")
	for _, b := range c.Blocks {
		if b.Type == "limits" {
			continue
		}
		block := fmt.Sprintf("%s %q", b.Type, b.Labels[0])
		switch b.Type {
		case "tool", "plugin":
			l.tool(b, block)
		case "tools":
			l.toolsDir(b, block)
		case "capability":
			l.capability(b, block)
		case "mcp_server":
			l.mcpServer(b, block)
		case "builtin":
			if !knownBuiltins[b.Labels[0]] {
				l.add(at(b.LabelRanges[0], block, fmt.Sprintf("unknown builtin %q", b.Labels[0]), `the only builtin is "process"`))
				continue
			}
			l.processBuiltin(b, block)
			if !contains(l.cfg.Builtins, b.Labels[0]) {
				l.cfg.Builtins = append(l.cfg.Builtins, b.Labels[0])
			}
		}
	}
	sort.Strings(l.cfg.Builtins)
	l.checkBackends()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// claim records a name, refusing duplicates and invalid names.
func (l *loader) claim(name string, r hcl.Range, block string) bool {
	if !mcpnames.ValidName(name) { // what strict MCP clients accept
		l.add(at(r, block, fmt.Sprintf("invalid name %q", name), "use 1 to 64 letters, digits, '_' or '-' (what MCP clients accept)"))
		return false
	}
	if first, dup := l.names[name]; dup {
		l.add(at(r, block, fmt.Sprintf("duplicate name %q, first declared at %s:%d:%d", name, first.Filename, first.Start.Line, first.Start.Column), "give every tool and capability its own name"))
		return false
	}
	l.names[name] = r
	return true
}

func (l *loader) tool(b *hcl.Block, block string) {
	schema := toolSchema
	if b.Type == "plugin" {
		schema = pluginSchema
	}
	c, hd := b.Body.Content(schema)
	l.diags = append(l.diags, fromHCL(hd, block)...)
	if hd.HasErrors() {
		return
	}
	t := &ToolDecl{Name: b.Labels[0], Kind: KindExec, Block: block, Range: b.DefRange, AllowRunAs: true}
	if b.Type == "plugin" {
		t.Kind = KindPlugin
	}
	if !l.claim(t.Name, b.LabelRanges[0], block) {
		return
	}
	l.toolNames[t.Name] = true
	p, ok := l.str(c.Attributes["path"], block)
	if !ok {
		return
	}
	t.Path = l.resolve(p)
	if !l.options(t, c, block) {
		return
	}
	if !l.bindings(t, c, block) {
		return
	}
	if !l.send(t, b, c.Attributes["send"], block) {
		return
	}
	if !l.concurrency(t, c.Attributes["concurrency"], block) {
		return
	}
	if l.executable(t.Path, c.Attributes["path"].Expr.Range(), block) {
		l.cfg.Tools = append(l.cfg.Tools, t)
	}
}

// options reads the per-tool operator settings shared by tool, plugin and tools blocks.
func (l *loader) options(t *ToolDecl, c *hcl.BodyContent, block string) bool {
	ok := true
	if a := c.Attributes["timeout"]; a != nil {
		s, sok := l.str(a, block)
		if sok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				l.add(at(a.Expr.Range(), block, fmt.Sprintf("invalid timeout %q", s), `write a positive duration such as "30s" or "2m"`))
				ok = false
			}
			t.Timeout = d
		} else {
			ok = false
		}
	}
	if a := c.Attributes["allow_run_as"]; a != nil {
		v, bok := l.boolean(a, block)
		t.AllowRunAs = v
		ok = ok && bok
	}
	lim, lok := l.limitsBlock(c.Blocks, block)
	t.Limits = lim
	return ok && lok
}

func (l *loader) toolsDir(b *hcl.Block, block string) {
	c, hd := b.Body.Content(toolsSchema)
	l.diags = append(l.diags, fromHCL(hd, block)...)
	if hd.HasErrors() {
		return
	}
	dir, ok := l.str(c.Attributes["dir"], block)
	if !ok {
		return
	}
	filter := ""
	if a := c.Attributes["filter"]; a != nil {
		if filter, ok = l.str(a, block); !ok {
			return
		}
	}
	proto := &ToolDecl{AllowRunAs: true}
	if !l.options(proto, c, block) {
		return
	}
	abs := l.resolve(dir)
	entries, err := os.ReadDir(abs)
	if err != nil {
		l.add(at(c.Attributes["dir"].Expr.Range(), block, fmt.Sprintf("reading directory %q: %v", dir, unwrapPathError(err)), "point dir at an existing directory of tools"))
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.Contains(name, filter) {
			continue
		}
		p := filepath.Join(abs, name)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			l.cfg.Notes = append(l.cfg.Notes, fmt.Sprintf("%s: %s is not an executable file, not taken as a tool", block, filepath.Join(dir, name)))
			continue
		}
		tname := strings.TrimSuffix(name, filepath.Ext(name))
		if !l.claim(tname, b.DefRange, fmt.Sprintf("%s (file %s)", block, name)) {
			continue
		}
		l.toolNames[tname] = true
		t := *proto
		t.Name, t.Kind, t.Path, t.Block, t.Range = tname, KindExec, p, block, b.DefRange
		l.cfg.Tools = append(l.cfg.Tools, &t)
	}
}

func (l *loader) capability(b *hcl.Block, block string) {
	c, hd := b.Body.Content(capabilitySchema)
	l.diags = append(l.diags, fromHCL(hd, block)...)
	if hd.HasErrors() {
		return
	}
	cp := &CapabilityDecl{Name: b.Labels[0], Range: b.DefRange, BackendRange: c.Attributes["backends"].Expr.Range()}
	if !l.claim(cp.Name, b.LabelRanges[0], block) {
		return
	}
	list, ok := l.strList(c.Attributes["backends"], block)
	if !ok {
		return
	}
	if len(list) == 0 {
		l.add(at(cp.BackendRange, block, "backends is empty", "list at least one tool, preferred first"))
		return
	}
	cp.Backends = list
	// Bad optional attributes are reported, and the backends still checked.
	if a := c.Attributes["required"]; a != nil {
		cp.Required, _ = l.boolean(a, block)
	}
	if a := c.Attributes["description"]; a != nil {
		cp.Description, _ = l.str(a, block)
	}
	if a := c.Attributes["fallback_on"]; a != nil {
		cp.FallbackOn = l.exitCodes(a, block)
	}
	l.cfg.Capabilities = append(l.cfg.Capabilities, cp)
}

// checkBackends runs once every block is read, so a capability may name a
// tool declared after it.
func (l *loader) checkBackends() {
	tools := l.toolNames
	for _, cp := range l.cfg.Capabilities {
		block := fmt.Sprintf("capability %q", cp.Name)
		seen := map[string]bool{}
		for _, b := range cp.Backends {
			switch {
			case seen[b]:
				l.add(at(cp.BackendRange, block, fmt.Sprintf("backend %q is listed twice", b), "list each backend once"))
			case !tools[b] && !tools[commandOwner(b)] && !l.openNames:
				l.add(at(cp.BackendRange, block, fmt.Sprintf("unknown backend %q", b), "name a tool or plugin declared in this file, one command of it as tool.command, or a tool an mcp_server selects"))
			}
			seen[b] = true
		}
	}
}

// resolve makes p absolute against the toolbox file's directory.
func (l *loader) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(l.cfg.Dir, p)
}

func (l *loader) executable(p string, r hcl.Range, block string) bool {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		fix := "fix the path (relative paths are relative to the toolbox file)"
		if strings.HasPrefix(block, "plugin ") && errors.Is(err, fs.ErrNotExist) {
			// Plugins are built, and a fresh clone has not built them.
			fix = fmt.Sprintf("build the plugin there (go build -trimpath -o %s PACKAGE), or %s", shq.Quote(p), fix)
		}
		l.add(at(r, block, fmt.Sprintf("tool binary %q: %v", p, unwrapPathError(err)), fix))
		return false
	case !st.Mode().IsRegular():
		l.add(at(r, block, fmt.Sprintf("tool binary %q is not a regular file", p), "point path at the tool's executable"))
		return false
	case st.Mode().Perm()&0o111 == 0:
		l.add(at(r, block, fmt.Sprintf("tool binary %q is not executable", p), fmt.Sprintf("run chmod +x %s", shq.Quote(p))))
		return false
	}
	return true
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// commandOwner is the tool part of a "tool.command" backend name, or "".
// Whether the command exists is known only once the tool is described.
func commandOwner(name string) string {
	if i := strings.IndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return ""
}
