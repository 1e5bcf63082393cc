package launcher

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// These tests drive execute directly: the sandbox package starts a
// /bin/sh script with no confinement, no lock and no argument encoding.

// longest bounds how long a call that must end early may take: far below
// the 30 s the fake tools sleep, generous for a loaded CI machine.
const longest = 15 * time.Second

func shCommand(t *testing.T, script string) sandbox.Command {
	t.Helper()
	path := writeScript(t, t.TempDir(), "tool", script)
	return sandbox.Command{Path: path, Args: []string{"run"}, Env: []string{"PATH=" + os.Getenv("PATH")}}
}

func defaultOptions() execOptions {
	return execOptions{timeout: 10 * time.Second, stop: stopPlan{signal: syscall.SIGTERM, grace: 5 * time.Second}}
}

func mustExecute(t *testing.T, script string, o execOptions) *Result {
	t.Helper()
	res, err := execute(t.Context(), nil, shCommand(t, script), o)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	return res
}

func TestExecuteRawOutput(t *testing.T) {
	res := mustExecute(t, `printf 'hello\nworld'`, defaultOptions())
	if string(res.Output) != "hello\nworld" || res.StdoutBytes != 11 {
		t.Errorf("Output = %q (%d bytes), want %q", res.Output, res.StdoutBytes, "hello\nworld")
	}
	if res.ExitCode != 0 || res.Binary || res.TimedOut || res.MediaType != "" || res.Message != "" {
		t.Errorf("result = %+v", res)
	}
}

func TestExecuteExitCodeAndStderr(t *testing.T) {
	var live bytes.Buffer
	o := defaultOptions()
	o.stderr = &live
	res := mustExecute(t, `echo out; echo diag >&2; exit 7`, o)
	if res.ExitCode != 7 {
		t.Errorf("ExitCode = %d, want 7", res.ExitCode)
	}
	if string(res.Output) != "out\n" {
		t.Errorf("Output = %q: stderr must never be part of the result", res.Output)
	}
	if res.StderrTail != "diag\n" || live.String() != "diag\n" {
		t.Errorf("StderrTail = %q, passed through %q; want %q both", res.StderrTail, live.String(), "diag\n")
	}
}

func TestExecuteStderrTailIsBounded(t *testing.T) {
	res := mustExecute(t, `i=0; while [ $i -lt 200 ]; do printf '%050d\n' $i >&2; i=$((i+1)); done; echo END >&2`, defaultOptions())
	if len(res.StderrTail) != StderrTailBytes || !strings.HasSuffix(res.StderrTail, "0199\nEND\n") {
		t.Errorf("StderrTail has %d bytes ending %q", len(res.StderrTail), res.StderrTail[max(0, len(res.StderrTail)-20):])
	}
}

func TestExecuteStreamsStdout(t *testing.T) {
	var stream bytes.Buffer
	o := defaultOptions()
	o.stdout = &stream
	res := mustExecute(t, `printf 'a\r\nb\000c'`, o)
	if stream.String() != "a\r\nb\x00c" {
		t.Errorf("streamed %q, want the exact bytes", stream.String())
	}
	if res.Output != nil || res.StdoutBytes != 6 {
		t.Errorf("Output = %q, StdoutBytes = %d; want nil and 6", res.Output, res.StdoutBytes)
	}
}

func TestExecuteBinaryOutput(t *testing.T) {
	script := `printf 'ok\377\376'`
	res := mustExecute(t, script, defaultOptions())
	if !res.Binary || res.MediaType != "application/octet-stream" || string(res.Output) != "ok\xff\xfe" {
		t.Errorf("Binary = %v, MediaType = %q, Output = %q", res.Binary, res.MediaType, res.Output)
	}

	o := defaultOptions()
	o.mediaType = "image/png"
	var stream bytes.Buffer
	o.stdout = &stream
	res = mustExecute(t, script, o)
	if !res.Binary || res.MediaType != "image/png" || stream.String() != "ok\xff\xfe" {
		t.Errorf("streamed: Binary = %v, MediaType = %q, stream = %q", res.Binary, res.MediaType, stream.String())
	}

	res = mustExecute(t, `printf 'caf\303'`, defaultOptions()) // cut inside "é"
	if !res.Binary {
		t.Error("output ending inside a UTF-8 character is not binary")
	}
	res = mustExecute(t, `printf 'caf\303\251\n'`, defaultOptions())
	if res.Binary || res.MediaType != "" {
		t.Errorf("UTF-8 output: Binary = %v, MediaType = %q", res.Binary, res.MediaType)
	}
}

func TestExecuteEmptyResult(t *testing.T) {
	add := &protocol.EmptyResult{Tag: "AddMessage", Contents: "no matches"}
	tests := []struct {
		name, script string
		empty        *protocol.EmptyResult
		want         string
	}{
		{"AddMessage on empty stdout", `echo diag >&2`, add, "no matches"},
		{"AddMessage with output", `echo hit`, add, ""},
		{"AddMessage with a newline only", `echo`, add, ""},
		{"AddMessage on failure", `exit 1`, add, ""},
		{"DoNothing", `true`, &protocol.EmptyResult{Tag: "DoNothing"}, ""},
		{"none declared", `true`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultOptions()
			o.emptyResult = tt.empty
			res := mustExecute(t, tt.script, o)
			if res.Message != tt.want {
				t.Errorf("Message = %q, want %q", res.Message, tt.want)
			}
		})
	}
}

func TestExecuteJSONLWithoutSchema(t *testing.T) {
	script := `printf '{"a":1}\nnot json\n\n  \n[1,2]'`
	o := defaultOptions()
	o.framing = protocol.FramingJSONL
	var stream bytes.Buffer
	o.stdout = &stream
	res := mustExecute(t, script, o)
	if stream.String() != "{\"a\":1}\nnot json\n\n  \n[1,2]" {
		t.Errorf("streamed %q, want the raw lines", stream.String())
	}
	if len(res.Events) != 3 {
		t.Fatalf("Events = %+v, want 3", res.Events)
	}
	if string(res.Events[0].Event) != `{"a":1}` || res.Events[0].Invalid {
		t.Errorf("event 0 = %+v", res.Events[0])
	}
	if e := res.Events[1]; !e.Invalid || e.Raw != "not json" || e.Error == "" || e.Event != nil {
		t.Errorf("event 1 = %+v, want invalid with raw line and error", e)
	}
	if string(res.Events[2].Event) != `[1,2]` {
		t.Errorf("unterminated last line: event 2 = %+v", res.Events[2])
	}
	if res.Output != nil || res.Lines != nil {
		t.Errorf("jsonl result also has Output %q or Lines %q", res.Output, res.Lines)
	}
}

func TestExecuteLinesAndChunks(t *testing.T) {
	o := defaultOptions()
	o.framing = protocol.FramingLines
	res := mustExecute(t, `printf 'a\n\nb c\r\nlast'`, o)
	want := []string{"a", "", "b c\r", "last"}
	if strings.Join(res.Lines, "|") != strings.Join(want, "|") || len(res.Lines) != len(want) {
		t.Errorf("Lines = %q, want %q", res.Lines, want)
	}
	o.framing = protocol.FramingChunks
	res = mustExecute(t, `printf 'a\n\nb'`, o)
	if string(res.Output) != "a\n\nb" || res.Lines != nil || res.Events != nil {
		t.Errorf("chunks: Output = %q, Lines = %q, Events = %v", res.Output, res.Lines, res.Events)
	}
}

func TestExecuteTimeoutKillsToolIgnoringTERM(t *testing.T) {
	o := defaultOptions()
	o.timeout = 200 * time.Millisecond
	o.stop.grace = 300 * time.Millisecond
	res := mustExecute(t, `trap '' TERM; echo started; sleep 30; echo never`, o)
	if !res.TimedOut || res.ExitCode != ExitTimeout {
		t.Fatalf("TimedOut = %v, ExitCode = %d; want true, 124", res.TimedOut, res.ExitCode)
	}
	if res.Elapsed < 500*time.Millisecond || res.Elapsed > longest {
		t.Errorf("Elapsed = %v, want timeout + stop grace (0.5 s) and then SIGKILL", res.Elapsed)
	}
	if string(res.Output) != "started\n" {
		t.Errorf("Output = %q, want what the tool printed before the timeout", res.Output)
	}
}

func TestExecuteTimeoutSendsDeclaredSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		name := map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGINT: "INT"}[sig]
		t.Run(name, func(t *testing.T) {
			o := defaultOptions()
			o.timeout = 200 * time.Millisecond
			o.stop = stopPlan{signal: sig, grace: time.Minute}
			res := mustExecute(t, `trap 'echo got `+name+` >&2; exit 3' `+name+`; sleep 30 >/dev/null 2>&1 & wait`, o)
			if !res.TimedOut || res.ExitCode != ExitTimeout {
				t.Errorf("TimedOut = %v, ExitCode = %d; want true, 124", res.TimedOut, res.ExitCode)
			}
			if res.StderrTail != "got "+name+"\n" {
				t.Errorf("StderrTail = %q: the tool did not get SIG%s", res.StderrTail, name)
			}
			if res.Elapsed > longest {
				t.Errorf("Elapsed = %v: the tool handled the signal, no grace was needed", res.Elapsed)
			}
		})
	}
}

func TestExecuteGrandchildHoldingStdout(t *testing.T) {
	t.Run("tool exits", func(t *testing.T) {
		res := mustExecute(t, `sleep 30 & echo done`, defaultOptions())
		if res.Elapsed > longest || res.ExitCode != 0 || string(res.Output) != "done\n" {
			t.Errorf("Elapsed = %v, ExitCode = %d, Output = %q; want an early end", res.Elapsed, res.ExitCode, res.Output)
		}
	})
	t.Run("tool hangs", func(t *testing.T) {
		o := defaultOptions()
		o.timeout = 300 * time.Millisecond
		res := mustExecute(t, `(sleep 30; echo late) & wait`, o)
		if !res.TimedOut || res.Elapsed > longest {
			t.Errorf("TimedOut = %v, Elapsed = %v; want the call to end at its timeout", res.TimedOut, res.Elapsed)
		}
	})
}

func TestExecuteContext(t *testing.T) {
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(200*time.Millisecond, cancel)
		res, err := execute(ctx, nil, shCommand(t, `sleep 30`), defaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Canceled || res.TimedOut || res.ExitCode != 128+int(syscall.SIGTERM) || res.Elapsed > longest {
			t.Errorf("Canceled = %v, TimedOut = %v, ExitCode = %d, Elapsed = %v", res.Canceled, res.TimedOut, res.ExitCode, res.Elapsed)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		res, err := execute(ctx, nil, shCommand(t, `sleep 30`), defaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut || res.ExitCode != ExitTimeout {
			t.Errorf("TimedOut = %v, ExitCode = %d; want true, 124", res.TimedOut, res.ExitCode)
		}
	})
}

func TestExecuteStartErrors(t *testing.T) {
	dir := t.TempDir()
	noExec := filepath.Join(dir, "noexec")
	locktest.WriteFile(t, noExec, "#!/bin/sh\necho hi\n", 0o644)
	badInterp := filepath.Join(dir, "badinterp")
	locktest.WriteFile(t, badInterp, "#!/nonexistent/interpreter\n", 0o755)
	tests := []struct {
		name, path string
		want       error
		code       int
	}{
		{"missing", filepath.Join(dir, "missing"), ErrNotFound, ExitNotFound},
		{"missing interpreter", badInterp, ErrNotFound, ExitNotFound},
		{"not executable", noExec, ErrNotExecutable, ExitNotExecutable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := execute(t.Context(), nil, sandbox.Command{Path: tt.path}, defaultOptions())
			if res != nil || !errors.Is(err, tt.want) || ExitCode(err) != tt.code {
				t.Errorf("execute = %v, %v (exit %d); want nil and %v (exit %d)", res, err, ExitCode(err), tt.want, tt.code)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestExecuteStreamWriteErrorDoesNotBlockTool(t *testing.T) {
	o := defaultOptions()
	o.stdout = failingWriter{}
	res, err := execute(t.Context(), nil, shCommand(t, `seq 1 100000; exit 4`), o)
	if res == nil || res.ExitCode != 4 || res.StdoutBytes < 500000 {
		t.Fatalf("result %+v: the tool did not run to its end", res)
	}
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("err = %v, want the write error reported", err)
	}
}

// A tool killed (SIGKILL) in the middle of a jsonl line: the call ends at
// once with the signal's exit code, keeps the whole events it printed and
// reports the cut line as invalid, never dropped; with a redactor, a secret
// printed whole before the kill is still redacted and the bytes held back
// (the start of a possible secret) are written at the end.
func TestExecuteKilledMidOutput(t *testing.T) {
	const secret = "sk-0123456789abcdef"
	o := defaultOptions()
	o.framing = protocol.FramingJSONL
	o.redactor = NewRedactor([]string{secret})
	var stream bytes.Buffer
	o.stdout = &stream
	begun := time.Now()
	res := mustExecute(t, `printf '{"key":"`+secret+`"}\n{"b":"sk-01'; kill -9 $$; sleep 30`, o)
	if took := time.Since(begun); took > longest {
		t.Fatalf("the call took %s", took)
	}
	if res.ExitCode != 128+9 || res.TimedOut || res.Canceled {
		t.Errorf("ExitCode = %d, TimedOut %t, Canceled %t; want 137", res.ExitCode, res.TimedOut, res.Canceled)
	}
	want := `{"key":"` + Redacted + `"}` + "\n" + `{"b":"sk-01`
	if stream.String() != want {
		t.Errorf("streamed %q, want %q", stream.String(), want)
	}
	if len(res.Events) != 2 || res.Events[0].Invalid || !strings.Contains(string(res.Events[0].Event), Redacted) {
		t.Fatalf("Events = %+v, want the whole event then the cut line", res.Events)
	}
	if e := res.Events[1]; !e.Invalid || e.Raw != `{"b":"sk-01` || e.Error == "" {
		t.Errorf("cut line = %+v, want invalid with its raw bytes", e)
	}
}
