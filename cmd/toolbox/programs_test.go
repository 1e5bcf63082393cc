package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

// The tests in this file run the real programs as subprocesses and measure
// them from outside (peak RSS, what reaches their stdio). They build
// toolbox and toolbox-core without the race detector, whose own memory
// would hide what is measured.

var (
	buildOnce           sync.Once
	builtDir, buildErr  = "", error(nil)
	toolboxBin, coreBin string
)

// removeBuilt runs the tests, then removes the programs they built.
type removeBuilt struct{ m *testing.M }

func (r removeBuilt) Run() int {
	code := testenv.RunWithTmp(r.m)
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	return code
}

// programs builds toolbox and toolbox-core (and the toolbox-reaper beside
// them, which their tools run below) once per test run, static
// (CGO_ENABLED=0) as the README installs them.
func programs(t *testing.T) (toolbox, core string) {
	t.Helper()
	buildOnce.Do(func() {
		builtDir, buildErr = os.MkdirTemp("", "toolbox-programs-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", builtDir+"/", "github.com/toolbox-dev/toolbox/cmd/toolbox", "github.com/toolbox-dev/toolbox/cmd/toolbox-core", "github.com/toolbox-dev/toolbox/cmd/toolbox-reaper")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README installs them
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
		toolboxBin, coreBin = filepath.Join(builtDir, "toolbox"), filepath.Join(builtDir, "toolbox-core")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return toolboxBin, coreBin
}

// limited runs argv under a 2 GiB address-space limit, so that a program
// that does not bound its memory fails alone instead of taking the
// machine's memory from everything else.
func limited(argv ...string) *exec.Cmd {
	return exec.Command("/bin/sh", append([]string{"-c", `ulimit -v 2097152 && exec "$@"`, "sh"}, argv...)...)
}

// peakRSS is the largest resident set of a finished command, in bytes.
func peakRSS(t *testing.T, cmd *exec.Cmd) int64 {
	t.Helper()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatalf("no rusage for %v", cmd.Args)
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}

// writeFile writes content to dir/name with mode.
func writeFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// mcpClient talks JSON-RPC to `toolbox-core mcp` over its real stdin and
// stdout, one line at a time.
type mcpClient struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan []byte
}

// startMCP starts `toolbox-core mcp -f hcl` and initializes the session.
func startMCP(t *testing.T, hcl string) *mcpClient {
	t.Helper()
	_, core := programs(t)
	cmd := limited(core, "mcp", "-f", hcl, "--state-dir", t.TempDir())
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &mcpClient{t: t, cmd: cmd, in: in, lines: make(chan []byte, 16)}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				c.lines <- line
			}
			if err != nil {
				close(c.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if r := c.recv(); r["id"] != "init" || r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// send writes one line (a newline is added).
func (c *mcpClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("writing to toolbox mcp: %v", err)
	}
}

// recv reads the next message that is not a notification, failing the
// test when none comes within a minute or the server ended the session.
func (c *mcpClient) recv() map[string]any {
	c.t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("toolbox mcp closed its stdout (the session ended)")
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				c.t.Fatalf("toolbox mcp wrote a line that is not JSON: %q", line)
			}
			if _, isNote := m["method"]; isNote && m["id"] == nil {
				continue
			}
			return m
		case <-deadline:
			c.t.Fatalf("no answer from toolbox mcp within a minute")
		}
	}
}

// call sends tools/call of name with id and returns the answer.
func (c *mcpClient) call(id, name string) map[string]any {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, name))
	r := c.recv()
	if r["id"] != id {
		c.t.Fatalf("answer to %s: %v", id, r)
	}
	return r
}

// stop closes stdin and waits for the server to exit.
func (c *mcpClient) stop() {
	c.t.Helper()
	c.in.Close()
	for range c.lines {
	}
	if err := c.cmd.Wait(); err != nil {
		c.t.Fatalf("toolbox mcp: %v", err)
	}
}
