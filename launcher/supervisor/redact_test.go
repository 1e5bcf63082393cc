package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

// The secret of these tests: a quote inside, so that it appears escaped in
// JSON events.
const testSecret = `tok"en-9d8c7b6a5f4e3d2c1b0a`

var tokenArg = protocol.Arg{Name: "token", Description: "t", Type: "s", BackingType: "string", Arity: "single", Mode: "env"}

// bindSecret binds the env arg "token" of tool to $TB_TOKEN, as a secret.
func bindSecret(tool *manifest.Tool) {
	tool.Describe.Args = []protocol.Arg{tokenArg}
	tool.Bindings = map[string]*manifest.Binding{"token": {Env: "TB_TOKEN", Secret: true}}
}

// leakScript prints the secret on stderr at once, then as an event, and
// answers every input line with it; "quit" ends it with code 3 after
// printing it on stderr once more.
const leakScript = `esc=$(printf '%s' "$TOKEN" | sed 's/"/\\"/g')
echo "starting with $TOKEN" >&2
echo ready
printf '{"v":"%s"}\n' "$esc"
while IFS= read -r line; do
  printf '{"v":"answer %s"}\n' "$esc"
  case "$line" in *quit*) echo "dying with $TOKEN" >&2; exit 3;; esac
done`

// noSecret fails when what holds the secret or its JSON-escaped form, or
// when it does not say [redacted].
func noSecret(t *testing.T, what string, v any) {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		s = string(b)
	}
	if strings.Contains(s, "9d8c7b6a5f4e3d2c1b0a") {
		t.Errorf("%s: the secret leaked: %s", what, s)
	}
	if !strings.Contains(s, launcher.Redacted) {
		t.Errorf("%s: no %s in %s", what, launcher.Redacted, s)
	}
}

// TestServiceRedactsSecrets: the secret bound value a service prints on
// stderr, in its events and in its send answers is in none of its status,
// output pages, mails, send answers, log files and records.
func TestServiceRedactsSecrets(t *testing.T) {
	f := newFixture(t)
	bindSecret(f.AddTool(t, "leak", leakScript, describe("leak", protocol.ProcessService, &protocol.Process{
		Ready:  readyLineAt(`^ready$`),
		Input:  &protocol.Input{Framing: "jsonl"},
		Output: &protocol.Output{Framing: "jsonl", Event: json.RawMessage(`{"type":"object","required":["v"]}`)},
	}, nil)))
	state := t.TempDir()
	s := f.supervisor(t, func(c *Config) {
		c.CallerEnv = append(os.Environ(), "TB_TOKEN="+testSecret)
		c.StateDir, c.LogBytes = state, 1<<20
	})
	h, err := s.Start(ctxT(t), "sess", "leak", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{"op":"x"}`))
	if err != nil || ans.Status != SendAnswered {
		t.Fatalf("send: %+v, %v", ans, err)
	}
	noSecret(t, "send answer", ans)
	if _, err := s.Send(ctxT(t), "sess", h.Process, json.RawMessage(`{"op":"quit"}`)); err != nil {
		t.Fatal(err)
	}
	// Polled, not waited for: a completion an inline wait returned is not
	// mailed (issue 11 #14), and the exit mail is checked below.
	var st Status
	testenv.Eventually(t, 10*time.Second, "the service's end", func() bool {
		st = mustStatus(t, s, "sess", h.Process)
		return st.Done
	})
	if st.Status != StateFailed {
		t.Fatalf("status: %+v", st)
	}
	noSecret(t, "status", st)
	pg, err := s.Output("sess", h.Process, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, "output page", pg)
	if !strings.Contains(pg.Text(), "dying with "+launcher.Redacted) {
		t.Errorf("output %q lacks the last stderr line", pg.Text())
	}
	var mails []Mail
	testenv.Eventually(t, 5*time.Second, "the event and exit mails", func() bool {
		in, err := s.Inbox("sess", 0, 0)
		mails = in.Mails
		return err == nil && len(mails) >= 2 && mails[len(mails)-1].Kind == MailExit
	})
	var events []launcher.Event
	for _, m := range mails {
		events = append(events, m.Events...)
	}
	noSecret(t, "mailed events", events)
	for _, name := range []string{st.Logs.Stdout, st.Logs.Stderr} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		noSecret(t, "log file "+filepath.Base(name), string(data))
	}
	recs, err := ReadRecords(state)
	if err != nil || len(recs) != 1 {
		t.Fatalf("records: %+v, %v", recs, err)
	}
	if b, _ := json.Marshal(recs); bytes.Contains(b, []byte("9d8c7b6a5f4e3d2c1b0a")) {
		t.Errorf("the record holds the secret: %s", b)
	}
}

// TestStartErrorRedactsSecrets: a service that prints its secret and dies
// before it is ready leaves it in neither the start error nor its output.
func TestStartErrorRedactsSecrets(t *testing.T) {
	f := newFixture(t)
	bindSecret(f.AddTool(t, "early", `echo "no luck with $TOKEN"; echo "failing with $TOKEN" >&2; exit 4`,
		describe("early", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)}, nil)))
	s := f.supervisor(t, func(c *Config) { c.CallerEnv = append(os.Environ(), "TB_TOKEN="+testSecret) })
	_, err := s.Start(ctxT(t), "sess", "early", nil, StartOptions{})
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("start: %v, want a *StartError", err)
	}
	if strings.Contains(err.Error(), "9d8c7b6a5f4e3d2c1b0a") {
		t.Errorf("start error: %v", err)
	}
	pg, err := s.Tail("sess", se.Process, TailBytes)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, "tail after a failed start", pg)
}

// TestStreamRedactsSecrets: a stream run's events (each as it arrives and
// in the result), stderr (live and its tail) carry no secret.
func TestStreamRedactsSecrets(t *testing.T) {
	f := newFixture(t)
	bindSecret(f.AddTool(t, "gush", `esc=$(printf '%s' "$TOKEN" | sed 's/"/\\"/g')
printf '{"v":"%s"}\n' "$esc"; printf 'raw %s\n' "$TOKEN"; echo "err $TOKEN" >&2; exit 2`,
		describe("gush", protocol.ProcessStream, &protocol.Process{Output: &protocol.Output{Framing: "jsonl"}}, nil)))
	var live []launcher.Event
	var errb bytes.Buffer
	res, err := RunStream(ctxT(t), StreamRequest{
		LockPath: f.LockPath, Lock: f.Lock, Name: "gush", Session: "sess",
		CallerEnv: append(os.Environ(), "TB_TOKEN="+testSecret),
		OnEvent:   func(e launcher.Event) { live = append(live, e) },
		Stderr:    &errb, CompileSchema: compileSchema,
	})
	if err != nil || res.ExitCode != 2 || res.Count != 2 {
		t.Fatalf("stream: %+v, %v", res, err)
	}
	noSecret(t, "stream result", res)
	noSecret(t, "events as they arrived", live)
	noSecret(t, "live stderr", errb.String())
}

// TestStreamRedactsEnvdir: the values of a tool's envdir (its keys) are
// redacted like its secret bindings from a stream's events and stderr.
func TestStreamRedactsEnvdir(t *testing.T) {
	f := newFixture(t)
	tool := f.AddTool(t, "gush", `esc=$(printf '%s' "$API_TOKEN" | sed 's/"/\\"/g')
printf '{"v":"%s"}\n' "$esc"; echo "err $API_TOKEN" >&2`,
		describe("gush", protocol.ProcessStream, &protocol.Process{Output: &protocol.Output{Framing: "jsonl"}}, nil))
	env := filepath.Join(filepath.Dir(f.LockPath), "env", "gush")
	if err := os.MkdirAll(env, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env, "API_TOKEN"), []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tool.Runtime.Envdir = "env/gush"
	var live []launcher.Event
	var errb bytes.Buffer
	res, err := RunStream(ctxT(t), StreamRequest{
		LockPath: f.LockPath, Lock: f.Lock, Name: "gush", Session: "sess",
		OnEvent: func(e launcher.Event) { live = append(live, e) },
		Stderr:  &errb, CompileSchema: compileSchema,
	})
	if err != nil || res.Count != 1 {
		t.Fatalf("stream: %+v, %v", res, err)
	}
	noSecret(t, "stream result", res)
	noSecret(t, "events as they arrived", live)
	noSecret(t, "live stderr", errb.String())
}
