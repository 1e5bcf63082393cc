package manifest

import (
	"fmt"
	"slices"
	"strings"
)

// Limits are the resource limits of a tool (or of a builtin's commands) as
// resolved at lock time from the toolbox file's limits blocks and the
// defaults (DESIGN.md §3, §6); the launcher applies exactly these. A zero
// field is unlimited; sizes are bytes. A limit the locking machine could
// not enforce for the tool was refused (if the operator set it) or left
// unset (if it was a default), so a lock never promises a limit that
// silently does not hold.
type Limits struct {
	MemoryBytes   uint64 `json:"memory_bytes,omitempty"`
	FileSizeBytes uint64 `json:"file_size_bytes,omitempty"`
	OpenFiles     uint64 `json:"open_files,omitempty"`
	CPUSeconds    uint64 `json:"cpu_seconds,omitempty"`
	Processes     uint64 `json:"processes,omitempty"`
	TmpSizeBytes  uint64 `json:"tmp_size_bytes,omitempty"`
	// ProcessesDefault says Processes is the default, not a value the
	// toolbox file sets: a start applies it where the tool's processes can
	// be counted (sandbox.LimitsRefusal: a delegated cgroup v2, or bwrap as
	// a uid other than 0) and leaves it out elsewhere, where a value the
	// operator wrote is refused. It keeps the lock the same whoever makes
	// it (root or not, with or without a cgroup), DESIGN.md §4.
	ProcessesDefault bool `json:"processes_default,omitempty"`
}

// minTmpSize is the least tmp size the toolbox file accepts (one page).
const minTmpSize = 4096

// DefaultSharedTmpSize is the size of the toolbox's shared tmp of a lock
// without Lock.SharedTmpSize: 256 MiB, the default tmp_size (DESIGN.md §3).
const DefaultSharedTmpSize = 256 << 20

// SharedTmpBytes is the size in bytes of the toolbox's shared tmp
// (Lock.SharedTmpSize, else DefaultSharedTmpSize); 0 means unlimited. A
// nil lock has the default.
func (l *Lock) SharedTmpBytes() uint64 {
	if l == nil || l.SharedTmpSize == nil {
		return DefaultSharedTmpSize
	}
	return *l.SharedTmpSize
}

// String renders the set fields as "memory_bytes=N ..." in a fixed order,
// "none" when nothing is limited (nil included).
func (l *Limits) String() string {
	if l == nil {
		return "none"
	}
	var parts []string
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{"memory_bytes", l.MemoryBytes}, {"file_size_bytes", l.FileSizeBytes}, {"open_files", l.OpenFiles},
		{"cpu_seconds", l.CPUSeconds}, {"processes", l.Processes}, {"tmp_size_bytes", l.TmpSizeBytes},
	} {
		if f.v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f.name, f.v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	if l.ProcessesDefault {
		parts = append(parts, "(processes: the default, where countable)")
	}
	return strings.Join(parts, " ")
}

// limits reports a change of limits (nil and all-zero both mean none) in
// one line naming each changed limit as the toolbox file's limits block
// spells it (file_size = "2MiB", not the lock's file_size_bytes): what
// the operator edits is the HCL.
func (d *differ) limits(what string, a, b *Limits) {
	if a.String() == b.String() {
		return
	}
	var changed []string
	fa, fb := a.fields(), b.fields()
	for i, f := range fa {
		if f.v != fb[i].v {
			changed = append(changed, fmt.Sprintf("%s %s -> %s", f.hcl, limitValue(f.v, f.unit), limitValue(fb[i].v, f.unit)))
		}
	}
	if pa, pb := a != nil && a.ProcessesDefault, b != nil && b.ProcessesDefault; pa != pb {
		changed = append(changed, fmt.Sprintf("processes from the default %t -> %t", pa, pb))
	}
	d.addf("%s limits changed: %s", what, strings.Join(changed, ", "))
}

// limitField is one limit as the toolbox file names it; unit is "bytes"
// for sizes, "" for counts.
type limitField struct {
	hcl, unit string
	v         uint64
}

func (l *Limits) fields() []limitField {
	var z Limits
	if l == nil {
		l = &z
	}
	return []limitField{
		{"memory", "bytes", l.MemoryBytes}, {"file_size", "bytes", l.FileSizeBytes},
		{"open_files", "", l.OpenFiles}, {"cpu_seconds", "", l.CPUSeconds},
		{"processes", "", l.Processes}, {"tmp_size", "bytes", l.TmpSizeBytes},
	}
}

// limitValue is v as the toolbox file would say it: "none" for 0, a size
// in MiB or KiB when it is a whole number of them.
func limitValue(v uint64, unit string) string {
	switch {
	case v == 0:
		return "none"
	case unit == "bytes" && v%(1<<40) == 0:
		return fmt.Sprintf("%q", fmt.Sprintf("%dTiB", v>>40))
	case unit == "bytes" && v%(1<<30) == 0:
		return fmt.Sprintf("%q", fmt.Sprintf("%dGiB", v>>30))
	case unit == "bytes" && v%(1<<20) == 0:
		return fmt.Sprintf("%q", fmt.Sprintf("%dMiB", v>>20))
	case unit == "bytes" && v%(1<<10) == 0:
		return fmt.Sprintf("%q", fmt.Sprintf("%dKiB", v>>10))
	}
	return fmt.Sprint(v)
}

// builtinLimits checks that every builtin with limits is declared, and
// the shared tmp's size.
func (v *validator) builtinLimits(l *Lock) {
	if n := l.SharedTmpBytes(); n > 0 && n < minTmpSize {
		v.addf("shared_tmp_size_bytes: %d is below %d", n, minTmpSize)
	}
	for _, name := range sortedKeys(l.BuiltinLimits) {
		switch {
		case l.BuiltinLimits[name] == nil:
			v.addf("builtin_limits: %q is null", name)
		case !slices.Contains(l.Builtins, name):
			v.addf("builtin_limits: %q is not among builtins", name)
		}
	}
}
