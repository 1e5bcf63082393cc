package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/manifest"
)

// leakyRunner is an MCP server that echoes its envdir's key everywhere it
// can: in its text, its raw result and its error.
type leakyRunner struct {
	secret string
	fail   bool
	// broken: the call reached the server, whose failure (a JSON-RPC
	// error, a dead pipe with its stderr) the runner passes on as is.
	broken bool
}

func (r leakyRunner) CallMCP(ctx context.Context, call MCPCall) (*MCPResult, bool, error) {
	if r.fail {
		return nil, false, call.Redactor.Error(errors.New("initializing: stderr: key " + r.secret))
	}
	if r.broken {
		return nil, true, errors.New("calling look: server error: bad key " + r.secret)
	}
	raw, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": "key " + r.secret}}})
	return &MCPResult{Text: "key " + r.secret + " and warn", Result: raw}, true, nil
}

// lockLook locks tool "look" of MCP server "srv" (envdir: its envdir) in f.
func lockLook(t *testing.T, f *fixture, envdir string) {
	t.Helper()
	def := json.RawMessage(`{"name":"look","inputSchema":{"type":"object"}}`)
	sum, err := manifest.DefinitionSHA256(def)
	if err != nil {
		t.Fatal(err)
	}
	f.Lock.MCPServers = map[string]*manifest.MCPServer{"srv": {Command: []string{"/bin/true"}, SHA256: strings.Repeat("0", 64),
		Platform: manifest.Platform(), Mechanism: "none", Envdir: envdir}}
	f.Lock.Tools["look"] = &manifest.Tool{Kind: manifest.KindMCP, Platform: manifest.Platform(), Runtime: manifest.Runtime{Mechanism: "none"},
		MCP: &manifest.MCPTool{Server: "srv", Name: "look", SHA256: sum, Definition: def}, Probe: manifest.Probe{Status: manifest.StatusOK}}
}

// bigRunner is an MCP server whose answer is n bytes of text.
type bigRunner struct{ n int }

func (r bigRunner) CallMCP(ctx context.Context, call MCPCall) (*MCPResult, bool, error) {
	text := strings.Repeat("x", r.n)
	raw, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	return &MCPResult{Text: text, Result: raw}, true, nil
}

// An MCP tool's text is held to the request's output budget
// (Request.MaxResultBytes), as any tool's stdout: an answer over it is
// truncated, and its raw result is not kept for MCP clients; its twin, an
// answer within it, is kept whole.
func TestMCPOutputBudget(t *testing.T) {
	f := newFixture(t)
	lockLook(t, f, "")
	const budget = 1 << 10
	for _, c := range []struct {
		n         int
		truncated bool
	}{{budget / 2, false}, {budget * 8, true}} {
		req := f.request("look", nil)
		req.MaxResultBytes = budget
		req.MCP = bigRunner{n: c.n}
		res, err := Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if (res.MCPResult == nil) != c.truncated {
			t.Errorf("an answer of %d bytes, budget %d: raw result of %d bytes kept", c.n, budget, len(res.MCPResult))
		}
		if res.Truncated != c.truncated || len(res.Output) > budget+1 {
			t.Errorf("an answer of %d bytes, budget %d: truncated %v, %d bytes kept", c.n, budget, res.Truncated, len(res.Output))
		}
	}
}

// An MCP server's envdir values of MinMCPSecret bytes or more are redacted
// from everything a call reports (its output, the result passed to MCP
// clients, its errors), as a tool's secret bindings; a short setting
// ("warn") is not: the twin. The secret holds < and &, which the raw
// result (json.Marshal) carries as \u003c and \u0026.
func TestMCPSecretsRedacted(t *testing.T) {
	f := newFixture(t)
	const secret = "sk-0123456789<abc&def"
	envdir := filepath.Join(f.Dir, "env", "srv")
	if err := os.MkdirAll(envdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"API_KEY": secret, "LEVEL": "warn"} {
		if err := os.WriteFile(filepath.Join(envdir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lockLook(t, f, "env/srv")

	req := f.request("look", nil)
	req.MCP = leakyRunner{secret: secret}
	res, err := Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Output); strings.Contains(out, secret) || out != "key [redacted] and warn\n" {
		t.Errorf("output %q", out)
	}
	if strings.Contains(string(res.MCPResult), secret) || !json.Valid(res.MCPResult) || !strings.Contains(string(res.MCPResult), Redacted) {
		t.Errorf("result for MCP clients %s", res.MCPResult)
	}
	req.MCP = leakyRunner{secret: secret, fail: true}
	if _, err := Run(context.Background(), req); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), Redacted) {
		t.Errorf("error %v", err)
	}
	// A call the server failed after it started: its error is redacted by
	// Run, not trusted to the runner.
	req.MCP = leakyRunner{secret: secret, broken: true}
	if res, err := Run(context.Background(), req); err == nil || res == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), Redacted) {
		t.Errorf("started call: result %v, error %v", res, err)
	}
}
