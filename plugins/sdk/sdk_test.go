package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/plugins/sdk"
)

func TestMain(m *testing.M) {
	if os.Getenv("SDK_TEST_SERVE") == "1" {
		sdk.Serve(upper{})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestArgsAccessors(t *testing.T) {
	a := sdk.Args{Values: map[string]any{
		"s": "text", "n": json.Number("12"), "e": json.Number("1.2e1"), "f": json.Number("1.5"),
		"b": true, "bs": "false", "ns": "7",
	}}
	if got := a.String("n"); got != "12" {
		t.Errorf("String(n) = %q", got)
	}
	if got := a.String("b"); got != "true" {
		t.Errorf("String(b) = %q", got)
	}
	if got := a.String("missing"); got != "" || a.Has("missing") || !a.Has("s") {
		t.Errorf("String(missing) = %q, Has wrong", got)
	}
	for name, want := range map[string]int64{"n": 12, "e": 12, "ns": 7, "missing": 42} {
		if got, err := a.Int(name, 42); err != nil || got != want {
			t.Errorf("Int(%s) = %d, %v; want %d", name, got, err, want)
		}
	}
	for _, name := range []string{"f", "s", "b"} {
		if _, err := a.Int(name, 0); err == nil || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("Int(%s) error = %v, want one naming the argument", name, err)
		}
	}
	if got, err := a.Bool("b", false); err != nil || !got {
		t.Errorf("Bool(b) = %v, %v", got, err)
	}
	if got, err := a.Bool("bs", true); err != nil || got {
		t.Errorf("Bool(bs) = %v, %v", got, err)
	}
	if _, err := a.Bool("s", false); err == nil {
		t.Errorf("Bool(s) succeeded")
	}
}

// probe records what Run received.
type probe struct {
	upper
	got *sdk.Args
}

func (p probe) Run(_ context.Context, args sdk.Args, _ sdk.Emitter) (int, error) {
	*p.got = args
	return 0, nil
}

func TestInvokeValidatesAndDecodes(t *testing.T) {
	var got sdk.Args
	tool := probe{got: &got}
	var out sdk.Recorder
	res, err := sdk.Invoke(context.Background(), tool, "", []byte(`{"text": "x", "times": null}`), &out)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Invoke = %+v, %v", res, err)
	}
	if got.Has("times") || got.String("text") != "x" {
		t.Errorf("Run got %+v; a null optional arg must be absent", got.Values)
	}
	if _, err := sdk.Invoke(context.Background(), tool, "", []byte(`{"text": "x", "times": 1.5}`), &out); err == nil || !strings.Contains(err.Error(), `"times"`) {
		t.Errorf("non-integer times: %v", err)
	}
	if _, err := sdk.Invoke(context.Background(), tool, "nope", nil, &out); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown command: %v", err)
	}
	if _, err := sdk.Invoke(context.Background(), tool, "", nil, &out); err == nil || !strings.Contains(err.Error(), `"text"`) {
		t.Errorf("missing required arg: %v", err)
	}
}

// failing returns an error, or panics.
type failing struct {
	upper
	panics bool
}

func (f failing) Run(context.Context, sdk.Args, sdk.Emitter) (int, error) {
	if f.panics {
		panic(errors.New("kaput"))
	}
	return 0, errors.New("no luck")
}

func TestInvokeExitStatus(t *testing.T) {
	args := []byte(`{"text": "x"}`)
	res, err := sdk.Invoke(context.Background(), failing{}, "", args, &sdk.Recorder{})
	if err != nil || res.ExitCode != 1 || res.Error != "no luck" {
		t.Errorf("error with code 0 = %+v, %v; want exit 1", res, err)
	}
	res, err = sdk.Invoke(context.Background(), failing{panics: true}, "", args, &sdk.Recorder{})
	if err != nil || res.ExitCode != 2 || res.Error != "panic: kaput" {
		t.Errorf("panic = %+v, %v; want exit 2", res, err)
	}
}

func TestRecorderEmit(t *testing.T) {
	var r sdk.Recorder
	if err := r.Emit(map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Emit(json.RawMessage(`{"b":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.Emit(json.RawMessage(`{bad`)); err == nil {
		t.Errorf("emitting invalid JSON succeeded")
	}
	if len(r.Events) != 2 || string(r.Events[0]) != `{"a":1}` || string(r.Events[1]) != `{"b":2}` {
		t.Errorf("events %q", r.Events)
	}
}

// Run by hand, a plugin says so on stderr, exits 1, and prints nothing on
// stdout.
func TestServeByHand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{"SDK_TEST_SERVE=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %q, want nothing", stdout.String())
	}
	if !strings.Contains(stderr.String(), "This binary is a plugin") {
		t.Errorf("stderr: %q", stderr.String())
	}
}

var _ sdk.Tool = upper{}
