package launcher

import (
	"fmt"
	"maps"
	"slices"

	"github.com/toolbox-dev/toolbox/manifest"
)

// CheckLock verifies a whole lock the way Run verifies one tool before it
// launches it, so that `toolbox check` refuses exactly what a run would
// refuse, with the same messages (issue 12 F). For every tool that can
// run (its probe passed: see Resolve), in name order: Verify (platform,
// toolbox file, binary hash), a known kind, RefuseUnconfined, and that its
// command is in its describe document; the toolbox file is verified first,
// even for a lock without tools. Each distinct problem is returned
// once (a changed toolbox file is one problem, not one per tool), as the
// *RefusedError Run would return.
//
// Unusable reports what Run refuses by the lock's own verdict, which
// `toolbox lock` accepted: each tool whose probe failed, and each
// capability without a usable backend (Resolve's error for its name).
// Both are nil for a lock in which everything can run.
func CheckLock(lockPath string, l *manifest.Lock) (problems, unusable []error) {
	if l == nil {
		return []error{&RefusedError{What: "no lock", Fix: relockFix}}, nil
	}
	seen := map[string]bool{}
	add := func(err error) {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			problems = append(problems, err)
		}
	}
	add(VerifyToolboxFile(lockPath, l))
	for _, name := range slices.Sorted(maps.Keys(l.Tools)) {
		t := l.Tools[name]
		if t == nil {
			continue
		}
		if !usable(t) {
			unusable = append(unusable, unusableError(name, t))
			continue
		}
		if err := Verify(lockPath, l, name); err != nil {
			add(err)
			continue
		}
		if t.Kind == manifest.KindMCP {
			continue // Verify checked its server; it has no describe document
		}
		if t.Kind != manifest.KindExec && t.Kind != manifest.KindPlugin {
			add(&RefusedError{What: fmt.Sprintf("tool %q is of unknown kind %q", name, t.Kind), Fix: relockFix})
			continue
		}
		add(RefuseUnconfined(name, t))
		if _, err := toolArgs(name, t); err != nil {
			add(err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.Capabilities)) {
		if _, _, err := Resolve(l, name, nil); err != nil {
			unusable = append(unusable, err)
		}
	}
	return problems, unusable
}
