package compiler

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// Every form a limit may take, and how a tool's block overrides the
// toolbox-wide one attribute by attribute, the rest coming from the
// defaults.
func TestLoadLimits(t *testing.T) {
	cfg, err := Load(filepath.Join("testdata", "load", "limits_good.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	top := manifest.Limits{MemoryBytes: 512 << 20, FileSizeBytes: 1 << 20, OpenFiles: 1024, CPUSeconds: 0, Processes: 256, TmpSizeBytes: 64 << 20}
	if got := resolveLimits(cfg.Limits).limits; got != top {
		t.Errorf("toolbox-wide: %+v, want %+v", got, top)
	}
	byName := map[string]*ToolDecl{}
	for _, tl := range cfg.Tools {
		byName[tl.Name] = tl
	}
	ok := top
	ok.MemoryBytes, ok.TmpSizeBytes = 2<<30, 0
	if got := resolveLimits(byName["ok"].Limits, cfg.Limits).limits; got != ok {
		t.Errorf("tool ok: %+v, want %+v", got, ok)
	}
	more := top
	more.FileSizeBytes = 1 << 40
	if got := resolveLimits(byName["more"].Limits, cfg.Limits).limits; got != more {
		t.Errorf("tools more: %+v, want %+v", got, more)
	}
	proc := top
	proc.Processes = 64
	if got := resolveLimits(cfg.BuiltinLimits["process"], cfg.Limits); got.limits != proc || got.processes == nil || got.processes.Range.Start.Line != 24 {
		t.Errorf("builtin process: %+v, want %+v from line 24", got.limits, proc)
	}
	if got := resolveLimits(nil, nil).limits; got != DefaultLimits() {
		t.Errorf("no block: %+v, want the defaults", got)
	}
}

// The defaults stop a tool writing 1 GiB into its /tmp, its root or one
// file, and leave room for real tools.
func TestDefaultLimits(t *testing.T) {
	d := DefaultLimits()
	if d.TmpSizeBytes >= 1<<30 || d.FileSizeBytes >= 1<<30 || d.TmpSizeBytes == 0 || d.FileSizeBytes == 0 {
		t.Errorf("tmp_size %d and file_size %d must be set and under 1 GiB", d.TmpSizeBytes, d.FileSizeBytes)
	}
	if d.MemoryBytes < 1<<30 || d.OpenFiles < 1024 || d.Processes < 1024 || d.CPUSeconds != 0 {
		t.Errorf("defaults too tight for go test and git: %+v", d)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"1": 1, "512MiB": 512 << 20, "1 GiB": 1 << 30, "3KiB": 3 << 10, "2TiB": 2 << 40, "7B": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "1.5GiB", "1MB", "1G", "1 mib", "99999999999TiB", "-1"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
}

// The default processes limit is locked the same whoever locks and
// whatever the machine counts (a lock committed by root passes
// `lock --check` as another user, and the reverse), marked as the default
// for each start to apply where it can; one the operator wrote is refused
// where nothing counts it, located at the attribute and naming the field.
func TestProcessesLimitEnforceable(t *testing.T) {
	if sandbox.DetectCgroup().Pids {
		t.Skip("cgroup v2 pids is delegated here: every processes limit holds")
	}
	r := resolveLimits(nil)
	l, err := r.enforceable("none", 0, "t", `tool "t"`)
	if err != nil || l == nil || l.Processes != DefaultProcesses || !l.ProcessesDefault || l.MemoryBytes != DefaultMemory {
		t.Fatalf("defaults under none as root: %+v, %v; want every default, processes marked as the default", l, err)
	}
	for _, who := range []struct {
		m   string
		uid uint32
	}{{"bwrap", 0}, {"bwrap", 65534}, {"landlock", 0}, {"landlock", 1000}} {
		if o, err := r.enforceable(who.m, who.uid, "t", `tool "t"`); err != nil || o == nil || *o != *l {
			t.Fatalf("defaults under %s as uid %d: %+v, %v; want the lock of none as root, %+v", who.m, who.uid, o, err, l)
		}
	}
	cfg, err := Load(filepath.Join("testdata", "load", "limits_good.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = resolveLimits(nil, cfg.Limits).enforceable("landlock", 0, "t", `tool "t"`)
	var d *Diagnostic
	var refusal *sandbox.RefusalError
	if !errors.As(err, &d) || !errors.As(err, &refusal) || refusal.Field != sandbox.FieldLimitProcesses || d.Line != 7 || !strings.Contains(d.Fix, "cgroup") {
		t.Fatalf("processes = 256 under landlock as root: %v (fix %q)", err, d.Fix)
	}
	// The twin: bwrap for another user counts the sandbox's processes.
	if l, err := resolveLimits(nil, cfg.Limits).enforceable("bwrap", 65534, "t", `tool "t"`); err != nil || l.Processes != 256 || l.ProcessesDefault {
		t.Fatalf("bwrap as nobody: %+v, %v", l, err)
	}
}
