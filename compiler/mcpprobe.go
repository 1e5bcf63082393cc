package compiler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolbox-dev/toolbox/catalog"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/mcpbackend"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/runspec"
	"github.com/toolbox-dev/toolbox/sandbox"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// KindMCPServer is the kind of the report of an MCP server that could not
// be locked (its tools, unknown, have none of their own).
const KindMCPServer = "mcp_server"

// mcpLocked is what probing one mcp_server block gave: the server and its
// tools for the lock, a report per tool, or the error that refuses it
// (Server nil) with a report under the server's name.
type mcpLocked struct {
	decl    *MCPServerDecl
	server  *manifest.MCPServer
	tools   map[string]*manifest.Tool
	reports []*ToolReport
	// report is the server's own: progress, and its failure.
	report *ToolReport
	err    error
}

// lockMCPServer resolves the server's runtime, hashes its executable (and
// entry script), starts it exactly as a run will (runspec.MCPServer under
// its sandbox), initializes, lists its tools and pins the selected ones.
// Calls are never made.
func (p *prober) lockMCPServer(ctx context.Context, d *MCPServerDecl) mcpLocked {
	start := time.Now()
	report := &ToolReport{Name: d.Name, Kind: KindMCPServer}
	out := mcpLocked{decl: d, report: report}
	secrets := p.mcpSecrets(d)
	refuse := func(err error) mcpLocked {
		err = redactSecrets(err, secrets)
		report.Err, report.Duration = err, time.Since(start)
		if report.Status == "" {
			report.Status = manifest.StatusFailed
		}
		report.Detail = err.Error()
		out.err, out.reports = err, []*ToolReport{report}
		return out
	}
	fail := func(msg, fix string) error {
		return &Diagnostic{File: d.Range.Filename, Line: d.Range.Start.Line, Col: d.Range.Start.Column, Block: d.Block, Msg: msg, Fix: fix}
	}
	if d.URL != "" {
		return p.lockMCPRemote(ctx, d, out, refuse, fail, start)
	}
	srv, err := p.mcpRuntime(d)
	if err != nil {
		var r *sandbox.RefusalError
		if errors.As(err, &r) {
			report.Status, report.Mechanism = manifest.StatusSkipped, string(r.Mechanism)
		}
		return refuse(err)
	}
	report.Mechanism = srv.Mechanism
	// The executable is opened once, hashed from that descriptor and
	// started from it, as every run will (launcher.OpenMCPServer).
	exe, err := sandbox.OpenExecutable(d.Exe)
	if err != nil {
		var r *sandbox.RefusalError
		if errors.As(err, &r) {
			return refuse(mcpRefusal(d, r))
		}
		return refuse(fail(fmt.Sprintf("hashing the executable: %v", err), "check the command and its permissions"))
	}
	defer exe.Close()
	srv.SHA256 = exe.SHA256()
	srv.Command = append([]string{p.lockRelative(d.Exe)}, d.Command[1:]...)
	for _, i := range d.PathArgs {
		srv.Command[i] = p.lockRelative(filepath.Join(p.cfg.Dir, d.Command[i]))
		srv.PathArgs = append(srv.PathArgs, i)
	}
	if d.Entry != "" {
		sum, err := manifest.HashFile(d.Entry)
		if err != nil {
			return refuse(fail(fmt.Sprintf("hashing the entry script: %v", err), "check the entry path and its permissions"))
		}
		srv.Entry = &manifest.HashedFile{Path: p.lockRelative(d.Entry), SHA256: sum}
	}
	if srv.Envdir, err = p.mcpEnvdir(d); err != nil {
		return refuse(err)
	}

	if srv.Sandbox != nil {
		p.makeWorkspaceFS(srv.Sandbox.FS)
	}
	probeLock := &manifest.Lock{EnvAllowlist: p.cfg.EnvAllowlist, MCPServers: map[string]*manifest.MCPServer{d.Name: srv}}
	// What every start would refuse (a grant reaching a protected path
	// landlock cannot mask, the state dir, the host's /tmp) is refused
	// now, naming the server, the grant and the file.
	spec, err := runspec.MCPServerSpec(p.cfg.Dir, probeLock, d.Name, p.trust)
	if err == nil {
		err = spec.Check()
	}
	if err != nil {
		var r *sandbox.RefusalError
		if errors.As(err, &r) {
			report.Status = manifest.StatusSkipped
			return refuse(mcpRefusal(d, r))
		}
		return refuse(fail(err.Error(), "run toolbox lock again"))
	}
	spec, cmd, err := runspec.MCPServer(p.cfg.Dir, probeLock, d.Name, p.opts.CallerEnv, "", p.trust)
	if err != nil {
		return refuse(fail(err.Error(), "run toolbox lock again"))
	}
	cmd.Exe = exe
	ctx, cancel := context.WithTimeout(ctx, p.opts.CheckTimeout)
	defer cancel()
	s, err := mcpbackend.Start(ctx, mcpbackend.Launch{Server: d.Name, Spec: spec, Command: cmd, StartTimeout: p.opts.CheckTimeout})
	if err != nil {
		var r *sandbox.RefusalError
		if errors.As(err, &r) {
			report.Status = manifest.StatusSkipped
		}
		return refuse(&Diagnostic{File: d.Range.Filename, Line: d.Range.Start.Line, Col: d.Range.Start.Column, Block: d.Block, Msg: err.Error(),
			Fix: "run the command by hand; under a sandbox, its executable, entry script and everything they load must be readable (sandbox.fs.read)", Err: err})
	}
	defer s.Close()
	return p.pinMCPTools(ctx, d, s, srv, out, refuse, fail, start)
}

// mcpRefusal locates a sandbox refusal at the server's block (which names
// the server), keeping the *sandbox.RefusalError reachable, naming the
// server, for check --probe.
func mcpRefusal(d *MCPServerDecl, r *sandbox.RefusalError) *Diagnostic {
	rc := *r
	rc.Field, rc.Block = strings.TrimPrefix(rc.Field, "runtime."), "" // the block's own sandbox; the diagnostic names the block
	diag := &Diagnostic{File: d.Range.Filename, Line: d.Range.Start.Line, Col: d.Range.Start.Column, Block: d.Block, Msg: rc.Error(), Fix: rc.Fix, Err: &rc}
	rc.Tool = d.Name // after the message: the block already names it
	return diag
}

// pinMCPTools lists the tools of a started server and pins the selected
// ones; out gets the server and its tools and reports.
func (p *prober) pinMCPTools(ctx context.Context, d *MCPServerDecl, s *mcpbackend.Session, srv *manifest.MCPServer, out mcpLocked, refuse func(error) mcpLocked, fail func(msg, fix string) error, start time.Time) mcpLocked {
	report := out.report
	srv.Info = s.Info()
	defs, err := s.List(ctx)
	if err != nil {
		return refuse(fail(err.Error(), "the server must answer tools/list"))
	}
	tools, err := p.selectMCPTools(d, srv, defs)
	if err != nil {
		return refuse(err)
	}
	if where := secretIn(p.mcpSecrets(d), srv.Info, tools); where != "" {
		return refuse(fail(fmt.Sprintf("the %s holds a value of the server's envdir (a secret: %d bytes or more); the lock, which is committed and shared, would publish it", where, runspec.MinMCPSecret),
			"make the server leave its secrets out of what it announces and lists (its configuration), or leave that tool out with tools = [...]; a value that is no secret belongs in env, not the envdir"))
	}
	out.server, out.tools = srv, tools
	report.Status, report.Duration = manifest.StatusOK, time.Since(start)
	report.Detail = fmt.Sprintf("%d tools (%s %s)", len(tools), srv.Info.Name, srv.Info.Version)
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		t := tools[name]
		out.reports = append(out.reports, &ToolReport{Name: name, Kind: manifest.KindMCP, Status: t.Probe.Status, Detail: t.Probe.Detail, Mechanism: srv.Mechanism, Duration: time.Since(start)})
	}
	return out
}

// lockMCPRemote locks a server reached over streamable HTTP: its URL,
// the envdir variable of its token, what it announces and lists.
func (p *prober) lockMCPRemote(ctx context.Context, d *MCPServerDecl, out mcpLocked, refuse func(error) mcpLocked, fail func(msg, fix string) error, start time.Time) mcpLocked {
	srv := &manifest.MCPServer{URL: d.URL, TokenEnv: d.Token, Platform: manifest.Platform(), Mechanism: string(sandbox.None)}
	if d.Timeout > 0 {
		srv.TimeoutSeconds = d.Timeout.Seconds()
	}
	out.report.Mechanism = srv.Mechanism
	var err error
	if srv.Envdir, err = p.mcpEnvdir(d); err != nil {
		return refuse(err)
	}
	probeLock := &manifest.Lock{MCPServers: map[string]*manifest.MCPServer{d.Name: srv}}
	token, err := runspec.MCPToken(p.cfg.Dir, probeLock, d.Name)
	if err != nil {
		return refuse(fail(err.Error(), fmt.Sprintf("put the token in <envdir_root>/%s/%s", d.Name, d.Token)))
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.CheckTimeout)
	defer cancel()
	s, err := mcpbackend.Dial(ctx, mcpbackend.Remote{Server: d.Name, URL: d.URL, Token: token, StartTimeout: p.opts.CheckTimeout})
	if err != nil {
		return refuse(fail(err.Error(), "check the URL, that the server runs, and its token"))
	}
	defer s.Close()
	return p.pinMCPTools(ctx, d, s, srv, out, refuse, fail, start)
}

// mcpSecrets are the values of the server's envdir that no report may
// show (runspec.MCPSecrets, as a call's reports): the server holds them
// in its environment at lock too, and may echo them on its stderr, which
// a failure quotes.
func (p *prober) mcpSecrets(d *MCPServerDecl) []string {
	if !d.Envdir {
		return nil
	}
	l := &manifest.Lock{MCPServers: map[string]*manifest.MCPServer{d.Name: {Envdir: filepath.Join(p.cfg.EnvdirRoot, d.Name), TokenEnv: d.Token}}}
	return runspec.MCPSecrets(p.cfg.Dir, l, d.Name)
}

// secretIn names the first place of what the lock would pin of a server
// (its serverInfo, its selected tools' definitions, by lock name) that
// holds one of secrets, as it is or as a JSON string holds it; "" when
// none does.
func secretIn(secrets []string, info manifest.MCPImplementation, tools map[string]*manifest.Tool) string {
	if len(secrets) == 0 {
		return ""
	}
	holds := func(text string) bool {
		for _, sec := range secrets {
			if strings.Contains(text, sec) || strings.Contains(text, jsonEscaped(sec)) {
				return true
			}
		}
		return false
	}
	switch {
	case holds(info.Name):
		return "server name"
	case holds(info.Version):
		return "server version"
	}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		if t := tools[name]; t.MCP != nil && holds(string(t.MCP.Definition)) {
			return fmt.Sprintf("definition of tool %q", name)
		}
	}
	return ""
}

// jsonEscaped is s as it appears between the quotes of a canonical JSON
// string (manifest.CanonicalJSON: encoding/json's escapes, no HTML
// escaping).
func jsonEscaped(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) != nil {
		return s
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// redactSecrets returns err with every secret of secrets in its message
// replaced by "[redacted]" (the longest first): a *Diagnostic stays one,
// its message redacted; errors.As still reaches what err wraps. An error
// without a secret is returned as it is.
func redactSecrets(err error, secrets []string) error {
	if len(secrets) == 0 || err == nil {
		return err
	}
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	redact := func(s string) string {
		for _, sec := range secrets {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
		return s
	}
	msg := err.Error()
	if redact(msg) == msg {
		return err
	}
	if diag, ok := err.(*Diagnostic); ok {
		dc := *diag
		dc.Msg, dc.Fix = redact(dc.Msg), redact(dc.Fix)
		if dc.Err != nil {
			dc.Err = &redactedError{msg: redact(dc.Err.Error()), err: dc.Err}
		}
		return &dc
	}
	return &redactedError{msg: redact(msg), err: err}
}

// redactedError is an error whose message had its secrets replaced.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// mcpEnvdir is the server's envdir as the lock keeps it ("" without
// envdir = true); an error when it does not exist.
func (p *prober) mcpEnvdir(d *MCPServerDecl) (string, error) {
	if !d.Envdir {
		return "", nil
	}
	dir := filepath.Join(p.cfg.EnvdirRoot, d.Name)
	abs := dir
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.cfg.Dir, dir)
	}
	if msg, fix := envdirProblem(abs); msg != "" {
		return "", &Diagnostic{File: d.Range.Filename, Line: d.Range.Start.Line, Col: d.Range.Start.Column, Block: d.Block,
			Msg: msg, Fix: fix}
	}
	return filepath.ToSlash(dir), nil
}

// mcpRuntime resolves the server's confinement as a tool's runtime.sandbox
// is resolved: the operator's mechanism for the declared fields, a
// *sandbox.RefusalError when none can honour them, and a sandbox under
// sandbox = "none" refused outright.
func (p *prober) mcpRuntime(d *MCPServerDecl) (*manifest.MCPServer, error) {
	srv := &manifest.MCPServer{Platform: manifest.Platform(), Env: d.Env, Mechanism: string(sandbox.None)}
	if d.Timeout > 0 {
		srv.TimeoutSeconds = d.Timeout.Seconds()
	}
	if len(srv.Env) == 0 {
		srv.Env = nil
	}
	fail := func(msg, fix string, err error) error {
		return &Diagnostic{File: d.Range.Filename, Line: d.Range.Start.Line, Col: d.Range.Start.Column, Block: d.Block, Msg: msg, Fix: fix, Err: err}
	}
	if sb := d.Sandbox; sb != nil && !d.Unconfined {
		m, out, err := resolveDeclaredSandbox(d.Block, sb, p.mechanism, fail)
		if err != nil {
			return nil, err
		}
		srv.Mechanism, srv.Sandbox = string(m), out
		if out.FS != nil {
			// Resolved now, once: a start opens exactly these, without
			// following a link planted later (DESIGN.md §6).
			for _, path := range append(slices.Clone(out.FS.Read), out.FS.Write...) {
				if _, named, _ := protocol.WorkspacePath(path); named {
					continue // the workspace is resolved at each call
				}
				abs := filepath.FromSlash(path)
				if !filepath.IsAbs(abs) {
					abs = filepath.Join(p.cfg.Dir, abs)
				}
				real, err := filepath.EvalSymlinks(abs)
				if err != nil {
					return nil, fail(fmt.Sprintf("sandbox.fs: declared path %q (%s) does not exist, so sandbox %q cannot grant it", path, abs, p.mechanism), "create it, or fix the path (relative paths are relative to the toolbox file)", nil)
				}
				if srv.Paths == nil {
					srv.Paths = map[string]string{}
				}
				srv.Paths[path] = p.lockRelative(real)
			}
		}
	}
	l, err := resolveLimits(d.Limits, p.cfg.Limits).enforceable(srv.Mechanism, uint32(os.Geteuid()), d.Name, d.Block)
	var diag *Diagnostic
	if errors.As(err, &diag) && diag.File == "" {
		diag.File, diag.Line, diag.Col = d.Range.Filename, d.Range.Start.Line, d.Range.Start.Column
	}
	if err != nil {
		return nil, err
	}
	srv.Limits = l
	return srv, nil
}

// selectMCPTools pins the tools the block selects (all the server lists
// when it names none) under their lock names. Errors: a selected or
// renamed tool the server does not list, a lock name strict clients
// refuse, an input schema that is not a JSON Schema for an object.
func (p *prober) selectMCPTools(d *MCPServerDecl, srv *manifest.MCPServer, defs []mcpbackend.Definition) (map[string]*manifest.Tool, error) {
	fail := func(msg, fix string) *Diagnostic {
		return &Diagnostic{File: d.Range.Filename, Line: d.Range.Start.Line, Col: d.Range.Start.Column, Block: d.Block, Msg: msg, Fix: fix}
	}
	listed := map[string]mcpbackend.Definition{}
	var names []string
	for _, def := range defs {
		listed[def.Name] = def
		names = append(names, def.Name)
	}
	selected := d.Tools
	if selected == nil {
		selected = names
		srv.Subset = false
	} else {
		srv.Subset = true
	}
	for _, n := range append(slices.Clone(selected), slices.Sorted(maps.Keys(d.Rename))...) {
		if _, ok := listed[n]; !ok {
			return nil, fail(fmt.Sprintf("the server (%s %s) lists no tool %q; it lists %s", srv.Info.Name, srv.Info.Version, n, quoteList(names)), "name one of its tools in tools and rename")
		}
	}
	tools := map[string]*manifest.Tool{}
	owner := map[string]string{} // lock name → the server's name of its tool
	var errs Diagnostics
	for _, n := range selected {
		def := listed[n]
		name := d.lockName(n)
		switch prev, dup := owner[name]; {
		case dup && prev == n:
			errs = append(errs, fail(fmt.Sprintf("the server lists tool %q twice", n), "leave it out with tools = [...], or fix the server"))
			continue
		case dup:
			// A rename onto another tool's name: one pin would silently
			// replace the other.
			errs = append(errs, fail(fmt.Sprintf("tools %q and %q of the server would both be tool %q", prev, n, name), fmt.Sprintf("give each its own name: rename = { %q = \"%s_%s\" }", n, d.Name, n)))
			continue
		}
		owner[name] = n
		if !mcpnames.ValidName(name) {
			errs = append(errs, fail(fmt.Sprintf("tool %q of the server is not a valid tool name", n), fmt.Sprintf("rename it: rename = { %q = \"%s\" }", n, catalog.StrictName(name))))
			continue
		}
		if err := checkInputSchema(def.JSON); err != nil {
			errs = append(errs, fail(fmt.Sprintf("tool %q: %v", n, err), "leave the tool out with tools = [...]"))
			continue
		}
		tools[name] = &manifest.Tool{
			Kind: manifest.KindMCP, Platform: srv.Platform,
			MCP:     &manifest.MCPTool{Server: d.Name, Name: n, SHA256: def.SHA256, Definition: def.JSON},
			Runtime: manifest.Runtime{Mechanism: srv.Mechanism, TimeoutSeconds: srv.TimeoutSeconds},
			Probe:   manifest.Probe{Status: manifest.StatusOK, Detail: fmt.Sprintf("listed by mcp server %q (%s %s)", d.Name, srv.Info.Name, srv.Info.Version)},
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return tools, nil
}

// checkInputSchema refuses a tool whose inputSchema is missing, not for an
// object, or not a JSON Schema the validator compiles (a call's arguments
// are checked against it before the server sees them).
func checkInputSchema(def json.RawMessage) error {
	var d struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(def, &d); err != nil || len(d.InputSchema) == 0 {
		return errors.New("its definition has no inputSchema")
	}
	var head struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(d.InputSchema, &head); err != nil || head.Type != "object" {
		return errors.New(`its inputSchema is not a schema of "type": "object"`)
	}
	if _, err := validate.CompileEventSchema(d.InputSchema); err != nil {
		return fmt.Errorf("its inputSchema does not compile: %v", err)
	}
	return nil
}

// addMCPServers puts the locked servers and their tools into the lock and
// the result: a server that could not be locked is an error, and so is a
// tool name that another tool, a capability or a server already has.
func addMCPServers(cfg *Config, servers []mcpLocked, lock *manifest.Lock, res *Result) {
	taken := map[string]string{}
	for _, cp := range cfg.Capabilities {
		taken[cp.Name] = fmt.Sprintf("capability %q", cp.Name)
	}
	for _, d := range cfg.MCPServers {
		taken[d.Name] = d.Block
	}
	for name := range lock.Tools {
		taken[name] = fmt.Sprintf("tool %q", name)
	}
	for _, s := range servers {
		for _, r := range s.reports {
			res.Tools[r.Name] = r
		}
		if s.err != nil {
			res.Errs = append(res.Errs, s.err)
			continue
		}
		d := s.decl
		ok := true
		for _, name := range slices.Sorted(maps.Keys(s.tools)) {
			if first, dup := taken[name]; dup {
				res.Errs = append(res.Errs, at(d.Range, d.Block, fmt.Sprintf("tool %q of the server has the name of %s", s.tools[name].MCP.Name, first), fmt.Sprintf(`rename it: rename = { %q = "%s_%s" }`, s.tools[name].MCP.Name, d.Name, name)))
				ok = false
			}
			taken[name] = fmt.Sprintf("tool %q of %s", s.tools[name].MCP.Name, d.Block)
		}
		if !ok {
			continue
		}
		if lock.MCPServers == nil {
			lock.MCPServers = map[string]*manifest.MCPServer{}
		}
		lock.MCPServers[d.Name] = s.server
		for name, t := range s.tools {
			lock.Tools[name] = t
		}
	}
}

// checkMCPBackends refuses a capability backend that is no locked tool
// once every mcp_server is locked (the toolbox file could not tell, since
// a server that selects no tools may list any name). Skipped when a
// server failed: its tools are unknown and its error says why.
func checkMCPBackends(cfg *Config, lock *manifest.Lock, res *Result) {
	if len(cfg.MCPServers) == 0 {
		return
	}
	for _, s := range cfg.MCPServers {
		if lock.MCPServers[s.Name] == nil {
			return
		}
	}
	for _, cp := range cfg.Capabilities {
		for _, b := range cp.Backends {
			if lock.Tools[b] == nil && res.Tools[b] == nil && commandOwner(b) == "" {
				res.Errs = append(res.Errs, at(cp.BackendRange, fmt.Sprintf("capability %q", cp.Name), fmt.Sprintf("unknown backend %q: no tool of this file and no tool its mcp_servers list has that name", b), "name a tool, one command of it as tool.command, or a tool an mcp_server lists (see `toolbox list --all`)"))
			}
		}
	}
}

// backendsDiffer compares what a model passes to two backends of one
// capability and names the first difference, or returns "". Exec and
// plugin backends compare their args (argsDiffer); when an MCP tool is one
// of them, the input schemas must be identical but for their annotations
// (catalog.SchemaShape).
func backendsDiffer(an string, a *manifest.Tool, bn string, b *manifest.Tool) (msg, fix string) {
	if a.Kind != manifest.KindMCP && b.Kind != manifest.KindMCP {
		return argsDiffer(an, modelArgs(a), bn, modelArgs(b)), "all backends of a capability must declare the same args (name, backing_type, arity), bound args left out"
	}
	ja, errA := json.Marshal(catalog.SchemaShape(catalog.InputSchemaOf(a)))
	jb, errB := json.Marshal(catalog.SchemaShape(catalog.InputSchemaOf(b)))
	if errA != nil || errB != nil {
		return fmt.Sprintf("backends %q and %q: an input schema does not encode", an, bn), relockFix
	}
	if d := manifest.JSONDiff(ja, jb); len(d) > 0 {
		return fmt.Sprintf("backends %q and %q have different input schemas: %s", an, bn, strings.Join(d, "; ")),
			"all backends of a capability must take the same arguments: an MCP tool's inputSchema must equal the others' (`toolbox schema` shows them), descriptions aside"
	}
	return "", ""
}

const relockFix = "run toolbox lock again"

func quoteList(names []string) string {
	if len(names) == 0 {
		return "no tools"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// MarkDrift turns the reports of res into those of `check --probe` against
// the lock on disk (locked): the tools of an MCP server whose listing
// differs from its pins are failed, with the differences as detail and
// the fix of a drift, and every capability's active backend is chosen
// again from the reports (first ok, else first unverified).
func MarkDrift(res *Result, locked *manifest.Lock) {
	if res.Lock == nil || locked == nil {
		return
	}
	for server, lines := range mcpbackend.DriftOf(locked, res.Lock) {
		if len(lines) == 0 {
			continue
		}
		for name, t := range res.Lock.Tools {
			if r := res.Tools[name]; r != nil && t.MCP != nil && t.MCP.Server == server {
				r.Status, r.Detail, r.Fix = manifest.StatusFailed, strings.Join(lines, "; "), mcpbackend.DriftFix
			}
		}
	}
	for i, c := range res.Capabilities {
		c.Active = ""
		for _, want := range []string{manifest.StatusOK, manifest.StatusUnverified} {
			for _, b := range c.Backends {
				if r := res.Tools[b]; c.Active == "" && r != nil && r.Err == nil && r.Status == want {
					c.Active = b
				}
			}
		}
		res.Capabilities[i] = c
	}
}
