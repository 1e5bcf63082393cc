package launcher

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
)

func TestResolve(t *testing.T) {
	f := newFixture(t)
	status := map[string]string{
		"a_failed": manifest.StatusFailed, "b_unverified": manifest.StatusUnverified,
		"c_ok": manifest.StatusOK, "d_ok": manifest.StatusOK, "e_skipped": manifest.StatusSkipped,
	}
	for name, s := range status {
		tool := f.AddTool(t, name, "exit 0", nil)
		tool.Probe = manifest.Probe{Status: s, Detail: "probe said " + s, Fix: "install " + name}
		if s == manifest.StatusFailed || s == manifest.StatusSkipped {
			tool.Describe = nil
		}
	}
	f.Lock.Capabilities["search"] = &manifest.Capability{Backends: []string{"a_failed", "b_unverified", "c_ok", "d_ok"}, Active: "c_ok"}
	f.Lock.Capabilities["fallback"] = &manifest.Capability{Backends: []string{"a_failed", "b_unverified"}, Active: "b_unverified"}
	f.Lock.Capabilities["dead"] = &manifest.Capability{Backends: []string{"a_failed", "e_skipped"}}

	tests := []struct {
		name, call  string
		overrides   map[string]string
		wantTool    string
		wantBackend string
		wantErr     string // substring; "" = success
	}{
		{name: "tool is itself", call: "c_ok", wantTool: "c_ok"},
		{name: "unverified tool runs", call: "b_unverified", wantTool: "b_unverified"},
		{name: "first ok backend", call: "search", wantTool: "c_ok", wantBackend: "c_ok"},
		{name: "first unverified when none ok", call: "fallback", wantTool: "b_unverified", wantBackend: "b_unverified"},
		{name: "override moves backend first", call: "search", overrides: map[string]string{"search": "d_ok"}, wantTool: "d_ok", wantBackend: "d_ok"},
		{name: "override of unverified backend wins", call: "search", overrides: map[string]string{"search": "b_unverified"}, wantTool: "b_unverified", wantBackend: "b_unverified"},
		{name: "unknown override ignored", call: "search", overrides: map[string]string{"search": "nope"}, wantTool: "c_ok", wantBackend: "c_ok"},
		{name: "override of a non-backend tool ignored", call: "fallback", overrides: map[string]string{"fallback": "c_ok"}, wantTool: "b_unverified", wantBackend: "b_unverified"},
		{name: "failed override falls back", call: "search", overrides: map[string]string{"search": "a_failed"}, wantTool: "c_ok", wantBackend: "c_ok"},
		{name: "override of another capability ignored", call: "search", overrides: map[string]string{"fallback": "a_failed"}, wantTool: "c_ok", wantBackend: "c_ok"},
		{name: "no usable backend", call: "dead", wantErr: `capability "dead" has no usable backend: a_failed (failed: probe said failed), e_skipped (skipped: probe said skipped)`},
		{name: "failed tool", call: "a_failed", wantErr: `tool "a_failed" did not pass its probe at lock time (status "failed"): probe said failed; install a_failed, then run ` + "`toolbox lock`"},
		{name: "skipped tool", call: "e_skipped", wantErr: `status "skipped"`},
		{name: "unknown name", call: "zzz", wantErr: `no tool or capability named "zzz" in the lock`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, backend, err := Resolve(f.Lock, tt.call, tt.overrides)
			if tt.wantErr != "" {
				var r *RefusedError
				if !errors.As(err, &r) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) error = %v, want a *RefusedError containing %q", tt.call, err, tt.wantErr)
				}
				if r.Fix == "" {
					t.Errorf("refusal %q names no fix", err)
				}
				if ExitCode(err) != ExitFailed {
					t.Errorf("ExitCode = %d, want %d", ExitCode(err), ExitFailed)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.call, err)
			}
			if tool != tt.wantTool || backend != tt.wantBackend {
				t.Errorf("Resolve(%q) = %q, %q; want %q, %q", tt.call, tool, backend, tt.wantTool, tt.wantBackend)
			}
		})
	}
}

func TestResolveUnknownIsErrUnknownName(t *testing.T) {
	f := newFixture(t)
	_, _, err := Resolve(f.Lock, "missing", nil)
	if !errors.Is(err, ErrUnknownName) {
		t.Fatalf("error %v does not wrap ErrUnknownName", err)
	}
	if _, _, err := Resolve(nil, "x", nil); err == nil {
		t.Fatal("Resolve with a nil lock succeeded")
	}
}
