package launcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

func TestRedactorString(t *testing.T) {
	r := NewRedactor([]string{"hunter2", "hunter22x", `q"t`, "a<b>&c", ""})
	for in, want := range map[string]string{
		"":                          "",
		"no secret here":            "no secret here",
		"pw=hunter2.":               "pw=[redacted].",
		"hunter2hunter2":            "[redacted][redacted]",
		"long hunter22x wins":       "long [redacted] wins",
		`json {"v":"q\"t"} escaped`: `json {"v":"[redacted]"} escaped`,
		`raw q"t`:                   `raw [redacted]`,
		// As json.Marshal writes it (an MCP server's result, mcprun).
		`{"text":"a\u003cb\u003e\u0026c"}`: `{"text":"[redacted]"}`,
		`{"text":"a<b>&c"}`:                `{"text":"[redacted]"}`,
		"hunter":                           "hunter",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	if NewRedactor(nil) != nil || NewRedactor([]string{""}) != nil {
		t.Error("a Redactor without secrets is not nil")
	}
	var none *Redactor
	if none.String("x") != "x" || none.Error(nil) != nil {
		t.Error("a nil Redactor changed something")
	}
}

// TestRedactWriterSplits: a secret split across writes, at every point, is
// still redacted; what cannot begin a secret is passed on at once.
func TestRedactWriterSplits(t *testing.T) {
	r := NewRedactor([]string{"s3cr3t", "s3cr3t-longer"})
	text := "a s3cr3t b s3cr3t-longer c s3cr3 d s3cr3t"
	want := r.String(text)
	if strings.Contains(want, "s3cr3t") {
		t.Fatalf("String left a secret: %q", want)
	}
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			var out bytes.Buffer
			w := r.Writer(&out)
			for _, part := range []string{text[:i], text[i:j], text[j:]} {
				if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("split at %d,%d: %q, want %q", i, j, out.String(), want)
			}
		}
	}
	var out bytes.Buffer
	w := r.Writer(&out)
	_, _ = w.Write([]byte("line one\n"))
	if out.String() != "line one\n" {
		t.Errorf("a line that cannot begin a secret was held back: %q", out.String())
	}
	_, _ = w.Write([]byte("then s3c"))
	if out.String() != "line one\nthen " {
		t.Errorf("wrote %q, want the start of a secret held back", out.String())
	}
}

// The secret of the run tests: a quote inside, so that it appears escaped
// in JSON events, and longer than the 40 bytes an argument error quotes.
const testSecret = `tok"en-5f1e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f`

// secretTool adds a tool whose env arg "token" is bound to $TB_TOKEN as a
// secret and whose script prints it in several ways.
func secretTool(t *testing.T, f *fixture, name, script string, d *protocol.Describe) {
	t.Helper()
	tool := f.AddTool(t, name, script, d)
	tool.Bindings = map[string]*manifest.Binding{"token": {Env: "TB_TOKEN", Secret: true}}
}

// assertNoSecret fails when the secret, or its JSON-escaped form, is in
// any of texts, or when none of them says [redacted].
func assertNoSecret(t *testing.T, what string, texts ...string) {
	t.Helper()
	esc, html := jsonEscaped(testSecret, false), jsonEscaped(testSecret, true)
	redacted := false
	for _, s := range texts {
		if strings.Contains(s, testSecret) || strings.Contains(s, esc) || strings.Contains(s, html) || strings.Contains(s, testSecret[8:30]) {
			t.Errorf("%s: the secret leaked: %q", what, s)
		}
		redacted = redacted || strings.Contains(s, Redacted) || strings.Contains(s, "secret bound value")
	}
	if !redacted {
		t.Errorf("%s: nothing says %s in %q", what, Redacted, texts)
	}
}

// TestRunRedactsSecrets: the secret bound value a tool prints on stdout,
// on stderr, in jsonl events (valid and invalid) and as an argument value
// is in neither the Result, nor the live stdout and stderr, nor the error.
func TestRunRedactsSecrets(t *testing.T) {
	f := newFixture(t)
	tokenArg := protocol.Arg{Name: "token", Description: "t", Type: "s", BackingType: "string", Arity: "single", Mode: "env"}
	secretTool(t, f, "raw", `echo "out $TOKEN"; echo "err $TOKEN" >&2; exit 3`,
		&protocol.Describe{Slug: "raw", Description: "d", Args: []protocol.Arg{tokenArg}})
	secretTool(t, f, "events", `esc=$(printf '%s' "$TOKEN" | sed 's/"/\\"/g')
printf '{"v":"%s"}\n' "$esc"; printf 'not json %s\n' "$TOKEN"; echo "err $TOKEN" >&2`,
		&protocol.Describe{Protocol: 2, Slug: "events", Description: "d", Args: []protocol.Arg{tokenArg},
			Process: &protocol.Process{Mode: protocol.ProcessStream, Output: &protocol.Output{
				Event: json.RawMessage(`{"type":"object"}`),
			}}})
	intArg := tokenArg
	intArg.BackingType = "integer"
	secretTool(t, f, "typed", `echo never`, &protocol.Describe{Slug: "typed", Description: "d", Args: []protocol.Arg{intArg}})

	for _, name := range []string{"raw", "events"} {
		for _, live := range []bool{false, true} {
			req := f.request(name, nil)
			req.CallerEnv = append(req.CallerEnv, "TB_TOKEN="+testSecret)
			var out, errb bytes.Buffer
			if live {
				req.Stdout, req.Stderr = &out, &errb
			}
			res, err := Run(t.Context(), req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			js, _ := json.Marshal(res)
			what := name
			if live {
				what += " streamed"
			}
			assertNoSecret(t, what, string(js), out.String(), errb.String())
			if live && !strings.Contains(out.String(), Redacted) {
				t.Errorf("%s: live stdout %q", what, out.String())
			}
		}
	}

	req := f.request("typed", nil)
	req.CallerEnv = append(req.CallerEnv, "TB_TOKEN="+testSecret)
	_, err := Run(t.Context(), req)
	if !errors.As(err, new(*ArgError)) {
		t.Fatalf("typed: %v, want an argument error", err)
	}
	assertNoSecret(t, "argument error", err.Error())
}

// secretQuotingRunner is a PluginRunner whose plugin fails its start and
// quotes its stderr in the error, as plugins.Start does (the stderr tail of
// a plugin that died before its handshake): the stderr there echoes the
// secret bound value the call gave it.
type secretQuotingRunner struct{}

func (secretQuotingRunner) RunPlugin(_ context.Context, call PluginCall) (int, bool, error) {
	if v, ok := call.Args["token"].(string); ok {
		return 0, false, fmt.Errorf("plugin exited before its handshake; its stderr: err %s", v)
	}
	return 0, false, errors.New("no token argument")
}

// TestRunRedactsSecretsInErrors: an error that quotes a tool's output (a
// plugin's start error carries its stderr tail) reaches the caller with the
// secret redacted, not only the Result (issue 10 #14: removing the error's
// redaction failed no test).
func TestRunRedactsSecretsInErrors(t *testing.T) {
	f := newFixture(t)
	tokenArg := protocol.Arg{Name: "token", Description: "t", Type: "s", BackingType: "string", Arity: "single", Mode: "env"}
	secretTool(t, f, "p", `exit 0`, &protocol.Describe{Slug: "p", Description: "d", Args: []protocol.Arg{tokenArg}})
	f.Lock.Tools["p"].Kind = manifest.KindPlugin
	req := f.request("p", nil)
	req.CallerEnv = append(req.CallerEnv, "TB_TOKEN="+testSecret)
	req.Plugins = secretQuotingRunner{}
	_, err := Run(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "before its handshake") {
		t.Fatalf("err = %v, want the plugin's start error", err)
	}
	assertNoSecret(t, "plugin start error", err.Error())
}
