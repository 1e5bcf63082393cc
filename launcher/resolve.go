package launcher

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/catalog"
	"github.com/toolbox-dev/toolbox/manifest"
)

// Resolve turns the name a caller gave into the locked tool to run.
//
// A capability name runs one of its backends: the backend named by
// backends[name] when it is one of the capability's backends and usable
// (probe ok or unverified), else the first ok backend, else the first
// unverified one (DESIGN.md §4). An override naming a tool that is not a
// backend of the capability is ignored, as is one whose probe failed (the
// usual order applies). For a capability, backend is the chosen tool
// (equal to tool); for a tool name, tool is name and backend is "".
// Overrides for other capabilities are ignored.
//
// Errors are *RefusedError: an unknown name (wrapping ErrUnknownName), a
// capability with no usable backend, a tool whose probe failed or that has
// no describe document; each names the fix.
func Resolve(l *manifest.Lock, name string, backends map[string]string) (tool, backend string, err error) {
	if l == nil {
		return "", "", &RefusedError{What: "no lock", Fix: relockFix}
	}
	name = lockName(l, name)
	if c, ok := l.Capabilities[name]; ok && c != nil {
		b, err := chooseBackend(l, name, c, backends[name])
		if err != nil {
			return "", "", err
		}
		return b, b, nil
	}
	t, ok := l.Tools[name]
	if !ok || t == nil {
		return "", "", &RefusedError{
			What: fmt.Sprintf("no tool or capability named %q in the lock", name),
			Fix:  "run `toolbox list` to see the names; a tool added to the toolbox file needs `toolbox lock`",
			Err:  ErrUnknownName,
		}
	}
	if !usable(t) {
		return "", "", unusableError(name, t)
	}
	return name, "", nil
}

// chooseBackend applies the override, then the lock's order.
func chooseBackend(l *manifest.Lock, capName string, c *manifest.Capability, override string) (string, error) {
	if override != "" && slices.Contains(c.Backends, override) {
		if t := l.Tools[override]; t != nil && usable(t) {
			return override, nil
		}
	}
	if order := c.UsableBackends(l.Tools); len(order) > 0 {
		return order[0], nil
	}
	var why []string
	for _, b := range c.Backends {
		status := "not locked"
		if t := l.Tools[b]; t != nil {
			status = t.Probe.Status
			if t.Probe.Detail != "" {
				status += ": " + t.Probe.Detail
			}
		}
		why = append(why, fmt.Sprintf("%s (%s)", b, status))
	}
	return "", &RefusedError{
		What: fmt.Sprintf("capability %q has no usable backend: %s", capName, strings.Join(why, ", ")),
		Fix:  "run `toolbox check --probe` to see each backend's fix, then `toolbox lock`",
	}
}

// usable says a tool passed its probe (ok, or unverified: it has no check)
// and has a describe document (or an MCP pin) to run it by.
func usable(t *manifest.Tool) bool {
	return t.Callable() && (t.Probe.Status == manifest.StatusOK || t.Probe.Status == manifest.StatusUnverified)
}

func unusableError(name string, t *manifest.Tool) error {
	what := fmt.Sprintf("tool %q did not pass its probe at lock time (status %q)", name, t.Probe.Status)
	if t.Probe.Detail != "" {
		what += ": " + t.Probe.Detail
	}
	fix := t.Probe.Fix
	if fix == "" {
		fix = "fix the tool"
	}
	return &RefusedError{What: what, Fix: fix + ", then run `toolbox lock`"}
}

// lockName maps a model's name (catalog.StrictName, e.g. "kv_get") back to
// the lock's ("kv.get"); a name the lock has, or one that maps to nothing,
// is returned as it is. Collisions are refused at lock time.
// ReadLock reads from the lock at lockPath what one call of name (a lock
// name or a model name) with the backend overrides needs, with
// manifest.ReadCall: a run then costs the same whatever else the toolbox
// holds. The lock it returns holds only those tools and capabilities; give
// it to Resolve and Run for this call only. Errors are manifest.Read's.
func ReadLock(lockPath, name string, backends map[string]string) (*manifest.Lock, error) {
	match := func(n string) bool { return n == name || catalog.StrictName(n) == name }
	extra := make([]string, 0, len(backends))
	for _, tool := range backends {
		extra = append(extra, tool)
	}
	return manifest.ReadCall(lockPath, match, extra)
}

func lockName(l *manifest.Lock, name string) string {
	if _, ok := l.Tools[name]; ok {
		return name
	}
	if _, ok := l.Capabilities[name]; ok {
		return name
	}
	for n := range l.Capabilities {
		if catalog.StrictName(n) == name {
			return n
		}
	}
	for n := range l.Tools {
		if catalog.StrictName(n) == name {
			return n
		}
	}
	return name
}
