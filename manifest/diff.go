package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Diff says what changed from prev (the lock on disk) to next (the lock the
// compiler would write), one short human-readable line per change, in a
// deterministic order: toolbox file, top-level settings, then tools and
// capabilities by name. It returns nil when the locks are equal.
//
// A nil prev gives the single line "no lock file"; a nil next gives "lock
// removed". Hashes are shortened to their first 12 digits. Differences in
// parts Diff does not name field by field (the header, say) are reported as
// one catch-all line, so Diff is empty exactly when Marshal would produce
// the same bytes for both.
func Diff(prev, next *Lock) []string {
	switch {
	case prev == nil && next == nil:
		return nil
	case prev == nil:
		return []string{"no lock file"}
	case next == nil:
		return []string{"lock removed"}
	}
	var d differ
	if prev.Version != next.Version {
		d.addf("format version %d -> %d", prev.Version, next.Version)
	}
	d.str("toolbox file path:", prev.File.Path, next.File.Path)
	switch {
	case prev.File.Config != next.File.Config:
		d.addf("toolbox file configuration changed (sha256 %s -> %s)", short(prev.File.Config), short(next.File.Config))
	case prev.File.SHA256 != next.File.SHA256:
		d.addf("toolbox file bytes changed, not its configuration (sha256 %s -> %s)", short(prev.File.SHA256), short(next.File.SHA256))
	}
	d.str("sandbox:", prev.Sandbox, next.Sandbox)
	d.str("envdir_root:", prev.EnvdirRoot, next.EnvdirRoot)
	d.str("default workspace:", prev.Workspace, next.Workspace)
	d.list("env_allowlist:", prev.EnvAllowlist, next.EnvAllowlist)
	d.list("builtins:", prev.Builtins, next.Builtins)
	if a, b := prev.SharedTmpBytes(), next.SharedTmpBytes(); a != b {
		d.addf("shared tmp size %s -> %s", showSize(a), showSize(b))
	}
	if !sameJSON(prev.Process, next.Process) {
		d.addf("builtin \"process\": %s -> %s", showProcess(prev.Process), showProcess(next.Process))
	}
	for _, name := range unionKeys(prev.MCPServers, next.MCPServers) {
		d.mcpServer(name, prev.MCPServers[name], next.MCPServers[name])
	}
	for _, name := range unionKeys(prev.BuiltinLimits, next.BuiltinLimits) {
		d.limits(fmt.Sprintf("builtin %q:", name), prev.BuiltinLimits[name], next.BuiltinLimits[name])
	}
	d.pin("bwrap", prev.Bwrap, next.Bwrap)
	// The commands of one binary share every field but their command: a
	// change to those is said once, for the binary, not once per command.
	binaries := map[string][2]*Tool{}
	for _, name := range unionKeys(prev.Tools, next.Tools) {
		a, b := prev.Tools[name], next.Tools[name]
		if a != nil && b != nil && a.Binary != "" && a.Binary == b.Binary {
			d.str(fmt.Sprintf("tool %q: command", name), a.Command, b.Command)
			if _, seen := binaries[a.Binary]; !seen {
				binaries[a.Binary] = [2]*Tool{a, b}
			}
			continue
		}
		d.tool(name, a, b)
	}
	for _, name := range sortedKeys(binaries) {
		pair := binaries[name]
		d.fields(fmt.Sprintf("binary %q", name), pair[0], pair[1])
	}
	for _, name := range unionKeys(prev.Capabilities, next.Capabilities) {
		d.capability(name, prev.Capabilities[name], next.Capabilities[name])
	}
	if len(d.lines) == 0 && !sameEncoding(prev, next) {
		d.addf("lock content differs (run toolbox lock to rewrite it)")
	}
	return d.lines
}

type differ struct{ lines []string }

func (d *differ) addf(format string, args ...any) {
	d.lines = append(d.lines, fmt.Sprintf(format, args...))
}

// both says whether an entry is in both locks; when it is in one only it
// says "added" or "removed" at at.
func (d *differ) both(at string, aNil, bNil bool) bool {
	switch {
	case aNil && !bNil:
		d.addf("%s: added", at)
	case bNil && !aNil:
		d.addf("%s: removed", at)
	}
	return !aNil && !bNil
}

func (d *differ) str(what, a, b string) {
	if a != b {
		d.addf("%s %q -> %q", what, a, b)
	}
}

// list compares lists where nil (unset) differs from empty.
func (d *differ) list(what string, a, b []string) {
	if (a == nil) != (b == nil) || !slices.Equal(a, b) {
		d.addf("%s %s -> %s", what, showList(a), showList(b))
	}
}

// showProcess is the builtin "process" in a few words: "none",
// "unconfined", or the mechanism and the sandbox as JSON.
func showProcess(p *ProcessBuiltin) string {
	switch {
	case p == nil:
		return "none"
	case p.Unconfined:
		return "unconfined"
	}
	sb, _ := json.Marshal(p.Sandbox)
	return fmt.Sprintf("%s %s", p.Mechanism, sb)
}

func (d *differ) tool(name string, a, b *Tool) {
	at := fmt.Sprintf("tool %q", name)
	if !d.both(at, a == nil, b == nil) {
		return
	}
	d.str(at+": binary", a.Binary, b.Binary)
	d.str(at+": command", a.Command, b.Command)
	d.fields(at, a, b)
	d.mcpTool(name, a.MCP, b.MCP)
}

// fields compares what a tool shares with the other commands of its
// binary: everything but its binary and command.
func (d *differ) fields(at string, a, b *Tool) {
	d.str(at+": kind", a.Kind, b.Kind)
	d.str(at+": path", a.Path, b.Path)
	if a.SHA256 != b.SHA256 {
		// A Go plugin built from the same source in a clone at another
		// path differs unless built with -trimpath (DESIGN.md §4).
		hint := ""
		if a.Kind == KindPlugin && b.Kind == KindPlugin {
			hint = "; a plugin rebuilt from the same source differs unless built reproducibly: go build -trimpath, the same Go version"
		}
		d.addf("%s: binary changed (sha256 %s -> %s)%s", at, short(a.SHA256), short(b.SHA256), hint)
	}
	d.str(at+": platform", a.Platform, b.Platform)
	if a.PluginProtocol != b.PluginProtocol {
		d.addf("%s: plugin protocol %d -> %d", at, a.PluginProtocol, b.PluginProtocol)
	}
	if a.Protocol != b.Protocol {
		d.addf("%s: protocol %d -> %d", at, a.Protocol, b.Protocol)
	}
	if !sameJSON(a.Describe, b.Describe) {
		d.addf("%s: describe document changed%s", at, jsonChanges(a.Describe, b.Describe))
	}
	if !sameJSON(a.Bindings, b.Bindings) {
		d.addf("%s: bindings changed", at)
	}
	ra, rb := a.Runtime, b.Runtime
	d.str(at+": runtime mechanism", ra.Mechanism, rb.Mechanism)
	if ia, ib := showIdentity(ra.RunAs), showIdentity(rb.RunAs); ia != ib {
		d.addf("%s: runtime run_as %s -> %s", at, ia, ib)
	}
	d.str(at+": runtime envdir", ra.Envdir, rb.Envdir)
	d.str(at+": runtime rundir", ra.Rundir, rb.Rundir)
	if ra.TimeoutSeconds != rb.TimeoutSeconds {
		d.addf("%s: timeout %gs -> %gs", at, ra.TimeoutSeconds, rb.TimeoutSeconds) // the tool block's timeout
	}
	d.limits(at+":", ra.Limits, rb.Limits)
	if !maps.Equal(ra.Paths, rb.Paths) {
		d.addf("%s: resolved sandbox paths changed (a declared path now leads elsewhere)", at)
	}
	// The check's result is what `TOOL check` reports of this machine
	// (a version of a program found on PATH, say): a change means the
	// machine differs from the one that locked, which is said as such.
	if a.Probe != b.Probe {
		var parts []string
		for _, f := range []struct{ name, a, b string }{{"status", a.Probe.Status, b.Probe.Status}, {"detail", a.Probe.Detail, b.Probe.Detail}, {"fix", a.Probe.Fix, b.Probe.Fix}} {
			if f.a != f.b {
				parts = append(parts, fmt.Sprintf("%s %q -> %q", f.name, f.a, f.b))
			}
		}
		d.addf("%s: its check reports this machine differently (%s): a program it uses differs from the locking machine's; install the same version here, or lock on this machine", at, strings.Join(parts, ", "))
	}
}

// pin compares pinned programs: a new binary at the same path is named as
// such (an upgraded bubblewrap is drift, and the fix is to lock again).
func (d *differ) pin(what string, a, b *Pin) {
	switch {
	case a == nil && b == nil:
	case a == nil:
		d.addf("%s: pinned %s (sha256 %s)", what, b.Path, short(b.SHA256))
	case b == nil:
		d.addf("%s: no longer pinned (was %s)", what, a.Path)
	case a.Path != b.Path:
		d.addf("%s: %s -> %s (sha256 %s)", what, a.Path, b.Path, short(b.SHA256))
	case a.SHA256 != b.SHA256:
		d.addf("%s: %s changed (sha256 %s -> %s): it was upgraded or replaced", what, a.Path, short(a.SHA256), short(b.SHA256))
	}
}

func (d *differ) capability(name string, a, b *Capability) {
	at := fmt.Sprintf("capability %q", name)
	if !d.both(at, a == nil, b == nil) {
		return
	}
	d.str(at+": description", a.Description, b.Description)
	if !slices.Equal(a.Backends, b.Backends) {
		d.addf("%s: backends %q -> %q", at, a.Backends, b.Backends)
	}
	if a.Required != b.Required {
		d.addf("%s: required %t -> %t", at, a.Required, b.Required)
	}
	d.str(at+": active", a.Active, b.Active)
	if !slices.Equal(a.FallbackOn, b.FallbackOn) {
		d.addf("%s: fallback_on %v -> %v", at, a.FallbackOn, b.FallbackOn)
	}
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	if hash == "" {
		return "(none)"
	}
	return hash
}

func showList(l []string) string {
	if l == nil {
		return "(unset)"
	}
	return fmt.Sprintf("%q", l)
}

func showIdentity(id *Identity) string {
	if id == nil {
		return "(caller)"
	}
	return fmt.Sprintf("%q (uid %d, gid %d, groups %v)", id.User, id.UID, id.GID, id.Groups)
}

// sameJSON compares two values by their canonical encoding; values that do
// not encode count as different.
// maxJSONChanges is how many changes jsonChanges names.
const maxJSONChanges = 5

// jsonChanges says where the JSON encodings of a and b differ (JSONDiff),
// as ": args[0].description changed: "a" -> "b"; ...", at most
// maxJSONChanges of them then "and N more"; "" when either cannot be
// encoded.
func jsonChanges(a, b any) string {
	ea, errA := json.Marshal(a)
	eb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return ""
	}
	lines := JSONDiff(ea, eb)
	if len(lines) == 0 {
		return ""
	}
	more := ""
	if n := len(lines) - maxJSONChanges; n > 0 {
		lines, more = lines[:maxJSONChanges], fmt.Sprintf(" and %d more", n)
	}
	return ": " + strings.Join(lines, "; ") + more
}

func sameJSON(a, b any) bool {
	ea, errA := canonicalJSON(a)
	eb, errB := canonicalJSON(b)
	return errA == nil && errB == nil && bytes.Equal(ea, eb)
}

// sameEncoding compares two locks by canonical encoding without validating
// them: Diff also explains differences between invalid locks.
func sameEncoding(a, b *Lock) bool {
	wa, _ := toWire(normalized(a))
	wb, _ := toWire(normalized(b))
	ea, errA := encodeCanonical(wa)
	eb, errB := encodeCanonical(wb)
	return errA == nil && errB == nil && bytes.Equal(ea, eb)
}

// showSize renders bytes, 0 as "unlimited".
func showSize(n uint64) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%d bytes", n)
}
