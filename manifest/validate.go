package manifest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/protocol"
)

// VersionError is returned by Unmarshal (and Read) for a lock written in
// another format version. Its message carries the fix.
type VersionError struct {
	// Version is the version the lock declares (0 when the key is absent).
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("lock format version is %d, this program reads version %d: run toolbox lock", e.Version, FormatVersion)
}

// InvalidError lists every problem found in a lock, in a deterministic
// order: top-level fields, then tools and capabilities by name.
type InvalidError struct {
	// Problems are short sentences, each naming the key at fault.
	Problems []string
}

func (e *InvalidError) Error() string {
	return "invalid lock: " + strings.Join(e.Problems, "; ")
}

// Sandbox requests a toolbox may make, and mechanisms a tool may be locked
// with (auto is resolved per tool at lock time).
var (
	sandboxRequests = []string{"auto", "bwrap", "landlock", "none"}
	toolMechanisms  = []string{"bwrap", "landlock", "none"}
	toolKinds       = []string{KindExec, KindPlugin, KindMCP}
	probeStatuses   = []string{StatusOK, StatusFailed, StatusUnverified, StatusSkipped}
)

// Validate checks that the parts of l agree with each other and with the
// format: version and header, hashes that are hex SHA-256, known sandbox,
// kinds, mechanisms and statuses, a describe document for every tool that
// was probed successfully, and capabilities whose backends and active
// backend are locked tools, and confinement that only the compiler could
// have written (see confinement: a tool declaring a sandbox locked with
// mechanism "none", a mechanism the sandbox setting could not choose,
// run_as dropped, bwrap not pinned). It returns nil or an *InvalidError
// listing every problem. It does not touch the file system.
func (l *Lock) Validate() error { return l.validate(false) }

func (l *Lock) validate(partial bool) error {
	v := validator{partial: partial}
	if l.Version != FormatVersion {
		v.addf("version is %d, want %d", l.Version, FormatVersion)
	}
	if l.Header != HeaderText {
		v.addf("_comment must be %q", HeaderText)
	}
	if l.File.Path == "" {
		v.addf("toolbox_file.path is missing")
	}
	v.sha256("toolbox_file.sha256", l.File.SHA256)
	v.sha256("toolbox_file.config_sha256", l.File.Config)
	v.oneOf("sandbox", l.Sandbox, sandboxRequests)
	v.names("env_allowlist", l.EnvAllowlist, false)
	v.names("builtins", l.Builtins, true)
	v.process(l)
	v.processWorkspace(l.Process)
	v.lockWorkspace(l)
	v.builtinLimits(l)
	if l.Tools == nil {
		v.addf("tools is missing")
	}
	if l.Capabilities == nil {
		v.addf("capabilities is missing")
	}
	for _, name := range sortedKeys(l.Tools) {
		v.tool(name, l.Tools[name])
	}
	v.mcpServers(l)
	for _, name := range sortedKeys(l.Capabilities) {
		v.capability(name, l.Capabilities[name], l.Tools)
	}
	v.confinement(l)
	if len(v.problems) > 0 {
		return &InvalidError{Problems: v.problems}
	}
	return nil
}

type validator struct {
	problems []string
	// partial: the lock holds only some of its tools (ReadCall).
	partial bool
	// commands caches the command names of each describe document: the
	// commands of one binary share it, and looking each up in a list cost
	// the square of their number.
	commands map[*protocol.Describe]map[string]bool
}

func (v *validator) addf(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

func (v *validator) oneOf(key, value string, allowed []string) {
	if !slices.Contains(allowed, value) {
		v.addf("%s is %q, want one of %s", key, value, strings.Join(allowed, ", "))
	}
}

func (v *validator) sha256(key, value string) {
	if !isSHA256(value) {
		v.addf("%s is %q, want 64 lower-case hex digits", key, value)
	}
}

// names checks a list of names: non-empty, no "=", no duplicates, and
// sorted when the format says so.
func (v *validator) names(key string, list []string, wantSorted bool) {
	seen := map[string]bool{}
	for _, n := range list {
		switch {
		case n == "" || strings.ContainsAny(n, "=\x00"):
			v.addf("%s holds an invalid name %q", key, n)
		case seen[n]:
			v.addf("%s lists %q twice", key, n)
		}
		seen[n] = true
	}
	if wantSorted && !slices.IsSorted(list) {
		v.addf("%s is not sorted", key)
	}
}

func (v *validator) tool(name string, t *Tool) {
	at := fmt.Sprintf("tool %q", name)
	if name == "" {
		v.addf("tools has an empty name")
	}
	if t == nil {
		v.addf("%s is null", at)
		return
	}
	v.oneOf(at+": kind", t.Kind, toolKinds)
	if t.Kind == KindMCP || t.MCP != nil {
		v.mcpTool(at, t)
	} else {
		if t.Path == "" {
			v.addf("%s: path is missing", at)
		}
		v.sha256(at+": sha256", t.SHA256)
	}
	if goos, goarch, ok := strings.Cut(t.Platform, "/"); !ok || goos == "" || goarch == "" {
		v.addf("%s: platform is %q, want GOOS/GOARCH", at, t.Platform)
	}
	v.oneOf(at+": probe.status", t.Probe.Status, probeStatuses)
	v.oneOf(at+": runtime.mechanism", t.Runtime.Mechanism, toolMechanisms)
	if t.Runtime.TimeoutSeconds < 0 {
		v.addf("%s: runtime.timeout_seconds is negative", at)
	}
	switch c := t.Runtime.Concurrency; {
	case c < 0 || c > protocol.MaxConcurrency:
		v.addf("%s: runtime.concurrency is %d, want 1 to %d", at, c, protocol.MaxConcurrency)
	case c != 0 && t.Kind != KindPlugin:
		v.addf("%s: runtime.concurrency is set on a tool of kind %q (only plugins have it)", at, t.Kind)
	}
	probed := t.Probe.Status == StatusOK || t.Probe.Status == StatusUnverified
	switch {
	case t.Describe == nil && probed && t.Kind != KindMCP:
		v.addf("%s: describe is missing (required when probe.status is %q)", at, t.Probe.Status)
	case t.Describe != nil && t.Protocol < 1:
		v.addf("%s: protocol is %d, want 1 or more", at, t.Protocol)
	}
	// protocol.Cancel refuses to marshal unless exactly one of its forms is
	// set; a lock that cannot be written back is not a valid lock.
	if rt := describeRuntime(t); rt != nil && rt.Cancel != nil && (rt.Cancel.Signal == "") == (len(rt.Cancel.Send) == 0) {
		v.addf("%s: describe runtime.cancel must be a signal name or {\"send\": EVENT}", at)
	}
	if t.Command != "" && t.Describe != nil && !v.hasCommand(t.Describe, t.Command) {
		v.addf("%s: command %q is not among the describe document's commands", at, t.Command)
	}
	switch {
	case t.Command != "" && t.Binary == "":
		v.addf("%s: command %q names no binary (the tool's name in the toolbox file)", at, t.Command)
	case t.Binary != "" && t.Command == "":
		v.addf("%s: binary %q is set without a command", at, t.Binary)
	}
}

// process checks the builtin "process": declared exactly when builtins
// lists it, and either unconfined (mechanism none, no sandbox) or confined
// (bwrap or landlock, a sandbox with known net and tmp).
func (v *validator) process(l *Lock) {
	declared := slices.Contains(l.Builtins, BuiltinProcess)
	p := l.Process
	switch {
	case declared && p == nil:
		v.addf("builtins lists %q but builtin_process is missing", BuiltinProcess)
		return
	case !declared && p != nil:
		v.addf("builtin_process is set but builtins does not list %q", BuiltinProcess)
		return
	case p == nil:
		return
	}
	if p.Unconfined {
		if p.Mechanism != "none" || p.Sandbox != nil {
			v.addf("builtin_process: unconfined wants mechanism \"none\" and no sandbox")
		}
		return
	}
	v.oneOf("builtin_process: mechanism", p.Mechanism, []string{"bwrap", "landlock"})
	if p.Sandbox == nil {
		v.addf("builtin_process: sandbox is missing (required unless unconfined)")
		return
	}
	v.oneOf("builtin_process: sandbox.net", p.Sandbox.Net, []string{"host", "none"})
	v.oneOf("builtin_process: sandbox.tmp", p.Sandbox.Tmp, []string{"shared", "private"})
}

func describeRuntime(t *Tool) *protocol.Runtime {
	if t.Describe == nil {
		return nil
	}
	return t.Describe.Runtime
}

func (v *validator) hasCommand(d *protocol.Describe, name string) bool {
	names, ok := v.commands[d]
	if !ok {
		names = make(map[string]bool, len(d.Commands))
		for _, c := range d.Commands {
			names[c.Name] = true
		}
		if v.commands == nil {
			v.commands = map[*protocol.Describe]map[string]bool{}
		}
		v.commands[d] = names
	}
	return names[name]
}

func (v *validator) capability(name string, c *Capability, tools map[string]*Tool) {
	at := fmt.Sprintf("capability %q", name)
	if name == "" {
		v.addf("capabilities has an empty name")
	}
	if c == nil {
		v.addf("%s is null", at)
		return
	}
	if len(c.Backends) == 0 {
		v.addf("%s: backends is empty", at)
	}
	seen := map[string]bool{}
	for _, b := range c.Backends {
		if _, ok := tools[b]; !ok {
			v.addf("%s: backend %q is not a locked tool", at, b)
		}
		if seen[b] {
			v.addf("%s: backend %q is listed twice", at, b)
		}
		seen[b] = true
	}
	if c.Active == "" {
		return
	}
	if _, ok := tools[c.Active]; !ok {
		v.addf("%s: active %q is not a locked tool", at, c.Active)
	} else if !seen[c.Active] {
		v.addf("%s: active %q is not one of its backends", at, c.Active)
	}
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
