package corecmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
)

func TestMCPFlags(t *testing.T) {
	var got *MCPOptions
	g := testGlobals()
	root := cli.NewRoot(g, func(g *cli.Globals) *cobra.Command {
		return NewCmdMCP(g, func(o *MCPOptions) error { got = o; return nil })
	})
	root.SetArgs([]string{"mcp", "-f", "tb.hcl", "--state-dir", "st", "--backend", "search=search_grep", "-C", "repo", "--max-calls", "3"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.ToolboxFile() != "tb.hcl" || got.StateDir != "st" || len(got.Backends) != 1 || got.Backends[0] != "search=search_grep" || got.Dir != "repo" || got.MaxCalls != 3 {
		t.Errorf("options: %+v", got)
	}
	if err := mcpRun(context.Background(), &MCPOptions{Globals: g, MaxCalls: -1}); !errors.As(err, new(*cli.UsageError)) {
		t.Errorf("--max-calls -1: %v, want a usage error", err)
	}
}

// mcpFixture writes a toolbox file, one tool and its lock into a temp dir
// and returns the toolbox file's path.
func mcpFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	hcl := filepath.Join(dir, "toolbox.hcl")
	tool := filepath.Join(dir, "greet")
	write := func(path, content string, mode os.FileMode) string { return writeHashed(t, path, content, mode) }
	l := manifest.New()
	l.Sandbox = "none"
	l.File = manifest.FileRef{Path: "toolbox.hcl", SHA256: write(hcl, "sandbox = \"none\"\ntool \"greet\" { path = \"greet\" }\n", 0o644)}
	l.File.Config = configDigest(t, hcl)
	l.Tools["greet"] = &manifest.Tool{
		Kind: "exec", Path: "greet", SHA256: write(tool, "#!/bin/sh\necho \"hello $2\"\n", 0o755),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Protocol: 1,
		Describe: &protocol.Describe{Slug: "greet", Description: "Say hello", Args: []protocol.Arg{
			{Name: "who", Description: "who", Type: "string", BackingType: "string", Arity: "single", Mode: "positional"},
		}},
		Runtime: manifest.Runtime{Mechanism: "none"},
		Probe:   manifest.Probe{Status: manifest.StatusOK},
	}
	if err := manifest.Write(manifest.LockPath(hcl), l); err != nil {
		t.Fatal(err)
	}
	return hcl
}

// writeHashed writes content to path and returns its sha256, as a lock
// records it.
func writeHashed(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// TestMCPRun drives the command's run with a real SDK client over pipes:
// it serves the lock's tools until the client closes, writes nothing but
// protocol to stdout and nothing to stderr.
func TestMCPRun(t *testing.T) {
	hcl := mcpFixture(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	g := &cli.Globals{File: hcl, StateDir: t.TempDir(), IO: cli.IOStreams{In: inR, Out: outW, Err: &stderr}}
	done := make(chan error, 1)
	go func() { done <- mcpRun(context.Background(), &MCPOptions{Globals: g}) }()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "greet" {
		t.Errorf("tools = %+v", tools.Tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"who": "ann"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); res.IsError || !ok || tc.Text != "hello ann\n" {
		t.Errorf("result = %+v", res)
	}
	_ = cs.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("mcp: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("mcp did not return after the client closed")
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestMCPRefusesStaleLock(t *testing.T) {
	hcl := mcpFixture(t)
	g := testGlobals()
	g.File, g.StateDir = hcl, t.TempDir()
	err := mcpRun(context.Background(), &MCPOptions{Globals: g})
	if err != nil {
		t.Fatalf("fresh lock: %v", err) // stdin is empty: it serves nothing and returns
	}
	// A comment and another layout: the configuration is the locked one.
	if err := os.WriteFile(hcl, []byte("# a comment\nsandbox = \"none\"\n\ntool \"greet\" {\n  path = \"greet\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := mcpRun(context.Background(), &MCPOptions{Globals: g}); err != nil {
		t.Fatalf("a comment refused the lock: %v", err)
	}
	if err := os.WriteFile(hcl, []byte("# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = mcpRun(context.Background(), &MCPOptions{Globals: g})
	if err == nil || !strings.Contains(err.Error(), `toolbox file "toolbox.hcl" changed (configuration sha256 `) || !strings.Contains(err.Error(), "run `toolbox lock`") {
		t.Errorf("stale lock: %v", err)
	}
	if out := g.IO.Out.(*bytes.Buffer).String(); out != "" {
		t.Errorf("stdout = %q", out)
	}
	os.Remove(manifest.LockPath(hcl))
	err = mcpRun(context.Background(), &MCPOptions{Globals: g})
	if err == nil || !strings.Contains(err.Error(), "does not exist; run `toolbox lock` first") {
		t.Errorf("missing lock: %v", err)
	}
}
