package health

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// checkedTool writes a tool whose check passes while okFile exists.
func checkedTool(t *testing.T, dir, name, okFile string) *manifest.Tool {
	t.Helper()
	script := "#!/bin/sh\nif [ -e '" + okFile + "' ]; then echo '{\"ok\":true}'; else echo '{\"ok\":false,\"detail\":\"down\",\"fix\":\"bring it up\"}'; exit 1; fi\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, err := manifest.HashFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return &manifest.Tool{Kind: manifest.KindExec, Path: name, SHA256: sum, Runtime: manifest.Runtime{Mechanism: "none"},
		Describe: &protocol.Describe{Protocol: 2, Check: true, Slug: name, Args: []protocol.Arg{}},
		Probe:    manifest.Probe{Status: manifest.StatusOK}}
}

// TestOverlaySwitchesBackends: when the active backend's check starts
// failing, the capability moves to the next locked backend whose check
// passes, and back when it recovers; nothing outside the lock is chosen.
func TestOverlaySwitchesBackends(t *testing.T) {
	dir := t.TempDir()
	upA, upB := filepath.Join(dir, "a.up"), filepath.Join(dir, "b.up")
	for _, f := range []string{upA, upB} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := manifest.New()
	l.Tools["a"] = checkedTool(t, dir, "a", upA)
	l.Tools["b"] = checkedTool(t, dir, "b", upB)
	l.Capabilities["cap"] = &manifest.Capability{Backends: []string{"a", "b"}, Active: "a"}
	m := New(Config{LockPath: filepath.Join(dir, "toolbox.lock.json"), Lock: l, CallerEnv: os.Environ(), TTL: time.Hour})
	ctx := context.Background()

	m.Round(ctx)
	if got := m.Overlay().Capabilities["cap"].Active; got != "a" {
		t.Fatalf("active %q, want a", got)
	}
	os.Remove(upA)
	m.Round(ctx)
	o := m.Overlay()
	if got := o.Capabilities["cap"].Active; got != "b" {
		t.Fatalf("after a fails: active %q, want b", got)
	}
	if p := o.Tools["a"].Probe; p.Status != manifest.StatusFailed || p.Detail != "down" || p.Fix != "bring it up" {
		t.Errorf("live probe of a: %+v", p)
	}
	if l.Tools["a"].Probe.Status != manifest.StatusOK || l.Capabilities["cap"].Active != "a" {
		t.Error("Overlay changed the lock it was given")
	}
	os.Remove(upB)
	m.Round(ctx)
	if got := m.Overlay().Capabilities["cap"].Active; got != "" {
		t.Fatalf("with both down: active %q, want none", got)
	}
	os.WriteFile(upA, nil, 0o644)
	m.Round(ctx)
	if got := m.Overlay().Capabilities["cap"].Active; got != "a" {
		t.Fatalf("after a recovers: active %q, want a", got)
	}
}

// TestRunCallsChanged: Run re-checks every TTL and reports a switch.
func TestRunCallsChanged(t *testing.T) {
	dir := t.TempDir()
	up := filepath.Join(dir, "a.up")
	l := manifest.New()
	l.Tools["a"] = checkedTool(t, dir, "a", up)
	l.Tools["b"] = checkedTool(t, dir, "b", filepath.Join(dir, "b.never"))
	l.Tools["b"].Probe.Status = manifest.StatusFailed
	l.Capabilities["cap"] = &manifest.Capability{Backends: []string{"a", "b"}, Active: "a"}
	m := New(Config{LockPath: filepath.Join(dir, "toolbox.lock.json"), Lock: l, CallerEnv: os.Environ(), TTL: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	changed := make(chan string, 4)
	go m.Run(ctx, func(l *manifest.Lock) { changed <- l.Capabilities["cap"].Active })
	select {
	case got := <-changed:
		if got != "" {
			t.Fatalf("switched to %q, want none (a is down, b failed)", got)
		}
	case <-ctx.Done():
		t.Fatal("no switch reported")
	}
}
