package launcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// These tests go through Run: lock, verification, argument encoding
// (protocol) and the command (runspec), with fake /bin/sh tools.

// echoArgs prints each argument after the verb between brackets, then stdin,
// then the env-mode variable.
const echoArgs = `for a in "$@"; do printf '[%s]' "$a"; done; echo; cat; echo "env=$MY_VAR"`

func TestRunArgModes(t *testing.T) {
	f := newFixture(t)
	count := arg("count", protocol.ModeDashDashEqual, protocol.ArityOptional)
	count.BackingType = "integer"
	f.AddTool(t, "modes", echoArgs, &protocol.Describe{Slug: "modes", Description: "d", Args: []protocol.Arg{
		arg("path", protocol.ModePositional, protocol.AritySingle),
		arg("pattern", protocol.ModeDashDashSpace, protocol.AritySingle),
		arg("glob", protocol.ModeDashDashEqual, protocol.ArityOptional),
		count,
		arg("body", protocol.ModeStdin, protocol.ArityOptional),
		arg("note", protocol.ModeStdin, protocol.ArityOptional),
		arg("my-var", protocol.ModeEnv, protocol.ArityOptional),
		arg("unused", protocol.ModeDashDashSpace, protocol.ArityOptional),
	}})
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{
			name: "every mode",
			args: map[string]any{
				"path": "a dir/x", "pattern": "-v", "glob": "*.go", "count": json.Number("3"),
				"body": "line one", "note": "two", "my-var": "from env",
			},
			want: "[run][a dir/x][--pattern][-v][--glob=*.go][--count=3]\nline one\ntwo\nenv=from env\n",
		},
		{
			name: "optional args absent emit nothing, stdin closed and empty",
			args: map[string]any{"path": "p", "pattern": "q"},
			want: "[run][p][--pattern][q]\nenv=\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := f.request("modes", tt.args)
			req.CallerEnv = withoutVar(os.Environ(), "MY_VAR")
			res, err := Run(t.Context(), req)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Output) != tt.want || res.ExitCode != 0 {
				t.Errorf("Output = %q (exit %d), want %q", res.Output, res.ExitCode, tt.want)
			}
			if res.Tool != "modes" || res.Backend != "" || res.Capability != "" {
				t.Errorf("names = %q, %q, %q", res.Tool, res.Backend, res.Capability)
			}
		})
	}
}

func TestRunArgErrorsBeforeLaunch(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.Dir, "ran")
	f.AddTool(t, "strict", "touch '"+marker+"'", &protocol.Describe{Slug: "strict", Description: "d", Args: []protocol.Arg{
		arg("path", protocol.ModePositional, protocol.AritySingle),
	}})
	tests := []struct {
		name string
		args map[string]any
	}{
		{"missing required", map[string]any{}},
		{"unknown key", map[string]any{"path": "x", "bogus": "y"}},
		{"object value", map[string]any{"path": map[string]any{"a": "b"}}},
		{"array value", map[string]any{"path": []any{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(t.Context(), f.request("strict", tt.args))
			var ae *ArgError
			if res != nil || !errors.As(err, &ae) || ExitCode(err) != ExitFailed {
				t.Fatalf("Run = %v, %v; want an *ArgError (exit 125)", res, err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the tool ran despite an argument error")
			}
		})
	}
}

func TestRunExitCodePassthrough(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "fails", "echo partial; echo 'it broke' >&2; exit 3", nil)
	res, err := Run(t.Context(), f.request("fails", nil))
	if err != nil {
		t.Fatalf("a tool exiting non-zero is not an error: %v", err)
	}
	if res.ExitCode != 3 || res.StderrTail != "it broke\n" || string(res.Output) != "partial\n" {
		t.Errorf("ExitCode = %d, StderrTail = %q, Output = %q", res.ExitCode, res.StderrTail, res.Output)
	}
}

func TestRunCapability(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "search_rg", "echo rg", nil)
	f.AddTool(t, "search_grep", "echo grep", nil)
	f.Lock.Capabilities["search"] = &manifest.Capability{Backends: []string{"search_rg", "search_grep"}, Active: "search_rg"}
	for override, want := range map[string]string{"": "search_rg", "search_grep": "search_grep", "nope": "search_rg"} {
		req := f.request("search", nil)
		req.Backends = map[string]string{"search": override}
		res, err := Run(t.Context(), req)
		if err != nil {
			t.Fatalf("override %q: %v", override, err)
		}
		if res.Tool != want || res.Backend != want || res.Capability != "search" || string(res.Output) != strings.TrimPrefix(want, "search_")+"\n" {
			t.Errorf("override %q: ran %q (backend %q, capability %q, output %q), want %q", override, res.Tool, res.Backend, res.Capability, res.Output, want)
		}
	}
}

func TestRunMultiCommandTool(t *testing.T) {
	f := newFixture(t)
	tool := f.AddTool(t, "git.status", `printf '%s ' "$@"`, &protocol.Describe{
		Protocol: 2, Slug: "git", Description: "d", Args: []protocol.Arg{},
		Process: &protocol.Process{Output: &protocol.Output{Framing: protocol.FramingChunks}},
		Commands: []protocol.Command{
			{Name: "log", Description: "l", Args: []protocol.Arg{arg("n", protocol.ModeDashDashEqual, protocol.AritySingle)}},
			{Name: "status", Description: "s", Args: []protocol.Arg{arg("short", protocol.ModeDashDashSpace, protocol.AritySingle)}},
		},
	})
	tool.Command = "status"
	res, err := Run(t.Context(), f.request("git.status", map[string]any{"short": "yes"}))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != "run status --short yes " {
		t.Errorf("argv = %q, want the command name then its args", res.Output)
	}
	// The other command's arg is unknown to this one.
	if _, err := Run(t.Context(), f.request("git.status", map[string]any{"short": "y", "n": "1"})); !errors.As(err, new(*ArgError)) {
		t.Errorf("arg of another command: err = %v, want *ArgError", err)
	}
}

func TestRunRefusals(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*manifest.Tool)
		want   string
	}{
		{
			name: "sandbox declared under none",
			mutate: func(t *manifest.Tool) {
				t.Describe.Runtime = &protocol.Runtime{Sandbox: &protocol.Sandbox{Net: "none"}}
			},
			want: `declares runtime.sandbox but is locked with sandbox mechanism "none"; it is never run unconfined`,
		},
		{
			name: "run_as declared under none",
			mutate: func(t *manifest.Tool) {
				t.Describe.Runtime = &protocol.Runtime{RunAs: &protocol.RunAs{User: "nobody"}}
			},
			want: `declares runtime.run_as`,
		},
		{
			name:   "unknown kind",
			mutate: func(t *manifest.Tool) { t.Kind = "wasm" },
			want:   `is of unknown kind "wasm"`,
		},
		{
			name: "service",
			mutate: func(t *manifest.Tool) {
				t.Describe.Protocol = 2
				t.Describe.Process = &protocol.Process{Mode: "service"}
			},
			want: "toolbox start",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			marker := filepath.Join(f.Dir, "ran")
			tt.mutate(f.AddTool(t, "t", "touch '"+marker+"'", nil))
			res, err := Run(t.Context(), f.request("t", nil))
			var r *RefusedError
			if res != nil || !errors.As(err, &r) || !strings.Contains(err.Error(), tt.want) || r.Fix == "" {
				t.Fatalf("Run = %v, %v; want a refusal containing %q with a fix", res, err, tt.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("a refused tool ran")
			}
		})
	}
}

func TestRunTimeouts(t *testing.T) {
	f := newFixture(t)
	tool := f.AddTool(t, "stubborn", `trap '' TERM; sleep 30`, &protocol.Describe{
		Protocol: 2, Slug: "stubborn", Description: "d", Args: []protocol.Arg{},
		Process: &protocol.Process{Output: &protocol.Output{Framing: protocol.FramingChunks}},
		Runtime: &protocol.Runtime{Timeout: &protocol.Timeout{Stop: seconds(0.2)}},
	})
	tool.Runtime.TimeoutSeconds = 0.3
	t.Run("operator default", func(t *testing.T) {
		res, err := Run(t.Context(), f.request("stubborn", nil))
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut || res.ExitCode != ExitTimeout || res.Elapsed < 500*time.Millisecond || res.Elapsed > longest {
			t.Errorf("TimedOut = %v, ExitCode = %d, Elapsed = %v; want 124 after 0.3 s + 0.2 s", res.TimedOut, res.ExitCode, res.Elapsed)
		}
	})
	t.Run("request wins", func(t *testing.T) {
		tool.Runtime.TimeoutSeconds = 60
		req := f.request("stubborn", nil)
		req.Timeout = 50 * time.Millisecond
		res, err := Run(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut || res.ExitCode != ExitTimeout || res.Elapsed > longest {
			t.Errorf("TimedOut = %v, ExitCode = %d, Elapsed = %v; want the request's 50 ms + 0.2 s", res.TimedOut, res.ExitCode, res.Elapsed)
		}
	})
}

func TestRunGrandchildHoldingStdout(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "forks", `sleep 30 & echo done`, nil)
	res, err := Run(t.Context(), f.request("forks", nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != "done\n" || res.Elapsed > longest {
		t.Errorf("Output = %q, Elapsed = %v; want the call to end when the tool exits", res.Output, res.Elapsed)
	}
}

func TestStopPlanAndCallTimeout(t *testing.T) {
	v2 := func(rt *protocol.Runtime) *protocol.Describe {
		return &protocol.Describe{Protocol: 2, Slug: "s", Description: "d", Args: []protocol.Arg{}, Runtime: rt}
	}
	tests := []struct {
		name string
		d    *protocol.Describe
		want stopPlan
	}{
		{"v1 defaults", &protocol.Describe{}, stopPlan{syscall.SIGTERM, DefaultStopGrace}},
		{"SIGINT", v2(&protocol.Runtime{Cancel: &protocol.Cancel{Signal: protocol.SignalInt}}), stopPlan{syscall.SIGINT, DefaultStopGrace}},
		{"SIGTERM", v2(&protocol.Runtime{Cancel: &protocol.Cancel{Signal: protocol.SignalTerm}}), stopPlan{syscall.SIGTERM, DefaultStopGrace}},
		{"send on a oneshot", v2(&protocol.Runtime{Cancel: &protocol.Cancel{Send: json.RawMessage(`{"op":"quit"}`)}}), stopPlan{syscall.SIGTERM, DefaultStopGrace}},
		{"stop grace", v2(&protocol.Runtime{Timeout: &protocol.Timeout{Stop: seconds(1.5)}}), stopPlan{syscall.SIGTERM, 1500 * time.Millisecond}},
	}
	for _, tt := range tests {
		if got := stopFor(tt.d); got != tt.want {
			t.Errorf("%s: stopFor = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	tool := &manifest.Tool{}
	if got := callTimeout(0, tool); got != DefaultTimeout {
		t.Errorf("no timeout anywhere: %v, want DefaultTimeout", got)
	}
	tool.Runtime.TimeoutSeconds = 2.5
	if got := callTimeout(0, tool); got != 2500*time.Millisecond {
		t.Errorf("operator default: %v, want 2.5s", got)
	}
	if got := callTimeout(time.Second, tool); got != time.Second {
		t.Errorf("request timeout: %v, want 1s", got)
	}
}

func TestRunJSONLEvents(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "events", `printf '{"n":1}\n{"x":2}\noops\n{"n":"three"}\n'`, &protocol.Describe{
		Protocol: 2, Slug: "events", Description: "d", Args: []protocol.Arg{},
		Process: &protocol.Process{Output: &protocol.Output{
			Event: json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`),
		}},
	})
	var stream bytes.Buffer
	req := f.request("events", nil)
	req.Stdout = &stream
	res, err := Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if stream.String() != "{\"n\":1}\n{\"x\":2}\noops\n{\"n\":\"three\"}\n" {
		t.Errorf("streamed %q, want the raw lines", stream.String())
	}
	if res.Framing != protocol.FramingJSONL || len(res.Events) != 4 {
		t.Fatalf("Framing %q, Events %+v", res.Framing, res.Events)
	}
	if e := res.Events[0]; e.Invalid || string(e.Event) != `{"n":1}` {
		t.Errorf("event 0 = %+v, want valid", e)
	}
	for i, raw := range map[int]string{1: `{"x":2}`, 2: "oops", 3: `{"n":"three"}`} {
		if e := res.Events[i]; !e.Invalid || e.Raw != raw || e.Error == "" {
			t.Errorf("event %d = %+v, want invalid with raw %q and an error", i, e, raw)
		}
	}
}

func TestRunLinesAndEmptyResult(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "lines", `printf 'one\ntwo\n'`, &protocol.Describe{
		Protocol: 2, Slug: "lines", Description: "d", Args: []protocol.Arg{},
		Process: &protocol.Process{Output: &protocol.Output{Framing: protocol.FramingLines}},
	})
	f.AddTool(t, "quiet", `exit 0`, &protocol.Describe{
		Slug: "quiet", Description: "d", Args: []protocol.Arg{},
		EmptyResult: &protocol.EmptyResult{Tag: "AddMessage", Contents: "nothing found"},
	})
	res, err := Run(t.Context(), f.request("lines", nil))
	if err != nil || strings.Join(res.Lines, ",") != "one,two" {
		t.Errorf("lines: %v, %+v", err, res)
	}
	res, err = Run(t.Context(), f.request("quiet", nil))
	if err != nil || res.Message != "nothing found" {
		t.Errorf("empty result: %v, %+v", err, res)
	}
}

func TestRunNotExecutable(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "t", "echo hi", nil)
	if err := os.Chmod(filepath.Join(f.Dir, "tools", "t"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), f.request("t", nil))
	if res != nil || !errors.Is(err, ErrNotExecutable) || ExitCode(err) != ExitNotExecutable {
		t.Fatalf("Run = %v, %v; want ErrNotExecutable (126)", res, err)
	}
}

func TestRunMissingBinary(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "t", "echo hi", nil)
	if err := os.Remove(filepath.Join(f.Dir, "tools", "t")); err != nil {
		t.Fatal(err)
	}
	_, err := Run(t.Context(), f.request("t", nil))
	if !errors.Is(err, ErrNotFound) || ExitCode(err) != ExitNotFound {
		t.Fatalf("Run: %v; want ErrNotFound (127)", err)
	}
}

func BenchmarkRunTrivial(b *testing.B) {
	f := newFixture(b)
	f.AddTool(b, "ok", "echo ok", nil)
	req := f.request("ok", nil)
	for b.Loop() {
		res, err := Run(b.Context(), req)
		if err != nil || string(res.Output) != "ok\n" {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
}

func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestRunWithoutValidatorRefusesSchemaTools: with no CompileSchema, a tool
// whose events need validating is refused before launch (never run with its
// events unchecked), and ExitCode maps that to 125.
func TestRunWithoutValidatorRefusesSchemaTools(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(t.TempDir(), "ran")
	f.AddTool(t, "events", "touch "+marker, &protocol.Describe{
		Protocol: 2, Slug: "events", Description: "d", Args: []protocol.Arg{},
		Process: &protocol.Process{Output: &protocol.Output{Event: json.RawMessage(`{"type":"object"}`)}},
	})
	req := f.request("events", nil)
	req.CompileSchema = nil
	_, err := Run(t.Context(), req)
	if !errors.Is(err, ErrNeedsValidator) {
		t.Fatalf("err = %v, want ErrNeedsValidator", err)
	}
	if ExitCode(err) != ExitFailed {
		t.Errorf("ExitCode = %d, want %d", ExitCode(err), ExitFailed)
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Error("the tool ran")
	}
}

// TestRunPluginWithoutHost: a plugin tool with no PluginRunner is refused
// before launch with ErrNeedsPlugin (cmd/toolbox hands it to toolbox-core).
func TestRunPluginWithoutHost(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.Dir, "ran")
	f.AddTool(t, "p", "touch '"+marker+"'", nil).Kind = manifest.KindPlugin
	_, err := Run(t.Context(), f.request("p", nil))
	if !errors.Is(err, ErrNeedsPlugin) {
		t.Fatalf("err = %v, want ErrNeedsPlugin", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the plugin ran")
	}
}

// TestRunStreamKeepsLastEvents: a stream tool's Result keeps the last
// KeepEvents events and counts the rest, while every event is streamed.
func TestRunStreamKeepsLastEvents(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "ticks", `i=1; while [ $i -le 50 ]; do echo "{\"n\":$i}"; i=$((i+1)); done`, &protocol.Describe{
		Protocol: 2, Slug: "ticks", Description: "d", Args: []protocol.Arg{},
		Process: &protocol.Process{Mode: protocol.ProcessStream, Output: &protocol.Output{
			Event: json.RawMessage(`{"type":"object","required":["n"]}`),
		}},
	})
	var stream bytes.Buffer
	req := f.request("ticks", nil)
	req.Stdout, req.KeepEvents = &stream, 5
	res, err := Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 5 || res.Elided != 45 {
		t.Fatalf("kept %d events, elided %d; want 5 and 45", len(res.Events), res.Elided)
	}
	if string(res.Events[0].Event) != `{"n":46}` || string(res.Events[4].Event) != `{"n":50}` {
		t.Errorf("kept %s .. %s, want n 46 .. 50", res.Events[0].Event, res.Events[4].Event)
	}
	if got := strings.Count(stream.String(), "\n"); got != 50 {
		t.Errorf("streamed %d lines, want all 50", got)
	}
}
