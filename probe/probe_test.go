package probe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCaptureBounds(t *testing.T) {
	ctx := context.Background()
	c, err := Capture(ctx, nil, sandbox.Command{Path: script(t, "sleep 30")}, 200*time.Millisecond)
	if err != nil || !c.TimedOut || !strings.Contains(c.Failure("describe", 200*time.Millisecond).Error(), "did not finish within 200ms") {
		t.Errorf("hang: %+v, %v", c, err)
	}
	c, err = Capture(ctx, nil, sandbox.Command{Path: script(t, "yes")}, 10*time.Second)
	if err != nil || !c.Overflow || len(c.Stdout) > MaxOutput {
		t.Errorf("flood: overflow %v, %d bytes kept, %v", c.Overflow, len(c.Stdout), err)
	}
	c, err = Capture(ctx, nil, sandbox.Command{Path: script(t, "echo oops >&2; exit 3")}, 10*time.Second)
	if err != nil || c.Failure("check", time.Second).Error() != "check exited with code 3: oops" {
		t.Errorf("exit 3: %+v, %v", c, err)
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	tool := func(body string, check bool) *manifest.Tool {
		p := script(t, body)
		sum, err := manifest.HashFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return &manifest.Tool{Kind: manifest.KindExec, Path: p, SHA256: sum, Runtime: manifest.Runtime{Mechanism: "none"},
			Describe: &protocol.Describe{Protocol: 2, Check: check}}
	}
	cases := []struct {
		name, body string
		check      bool
		want       manifest.Probe
	}{
		{"ok", `echo '{"ok":true,"detail":"fine"}'`, true, manifest.Probe{Status: "ok", Detail: "fine"}},
		{"not ok", `echo '{"ok":false,"detail":"down","fix":"start it"}'; exit 1`, true, manifest.Probe{Status: "failed", Detail: "down", Fix: "start it"}},
		{"garbage", `echo nope`, true, manifest.Probe{Status: "failed", Detail: "check printed no valid result: ", Fix: "`TOOL check` must print"}},
		{"no check", `exit 9`, false, manifest.Probe{Status: "unverified", Detail: "the tool declares no check"}},
	}
	for _, c := range cases {
		got := Check(ctx, "/", tool(c.body, c.check), nil, nil, os.Environ(), 5*time.Second, nil)
		if got.Status != c.want.Status || !strings.HasPrefix(got.Detail, c.want.Detail) || !strings.HasPrefix(got.Fix, c.want.Fix) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	// A binary that changed since the lock is not run: live health
	// re-probes (servers) never execute a file the lock does not pin.
	changed := tool(`echo '{"ok":true}'`, true)
	changed.SHA256 = strings.Repeat("0", 64)
	if got := Check(ctx, "/", changed, nil, nil, os.Environ(), 5*time.Second, nil); got.Status != "failed" || !strings.Contains(got.Detail, "changed since") {
		t.Errorf("changed binary: %+v", got)
	}
}
