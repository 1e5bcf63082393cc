package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMCPStdioSurvivesMalformedLines drives `toolbox-core mcp` over its
// real stdin and stdout. Each malformed line (which used to end the
// session and stop its processes, or, cut short, to swallow the next
// request) is answered with a JSON-RPC error, and the valid request after
// it is answered too; the service the session started is still running at
// the end.
func TestMCPStdioSurvivesMalformedLines(t *testing.T) {
	toolbox, _ := programs(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "svc.pid")
	writeFile(t, dir, "tools/svc", fmt.Sprintf(`#!/bin/sh
if [ "$1" = describe ]; then
  echo '{"protocol":2,"slug":"svc","description":"waits","args":[],"process":{"mode":"service","ready":{"kind":"immediate"}}}'
  exit 0
fi
echo $$ > %s
exec sleep 120
`, pidFile), 0o755)
	hcl := writeFile(t, dir, "toolbox.hcl", `tool "svc" { path = "tools/svc" }`+"\n", 0o644)
	if out, err := limited(toolbox, "lock", "-f", hcl).CombinedOutput(); err != nil {
		t.Fatalf("toolbox lock: %v\n%s", err, out)
	}
	c := startMCP(t, hcl)
	if r := c.call("start", "svc"); r["result"] == nil || strings.Contains(fmt.Sprint(r["result"]), "isError:true") {
		t.Fatalf("starting svc: %v", r)
	}
	pid := readPid(t, pidFile)

	huge := `{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"pad":"` + strings.Repeat("x", 17<<20) + `"}}`
	for i, tc := range []struct {
		name, line string
		code       float64
		id         any
	}{
		{"not JSON", "not json at all", -32700, nil},
		{"cut short", `{"jsonrpc":"2.0","id":"cut","method":"pi`, -32700, nil},
		{"a batch", `[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, -32600, nil},
		{"an object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil},
		{"a boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, nil},
		{"not a message", `42`, -32600, nil},
		{"no method, no result", `{"jsonrpc":"2.0","id":"x"}`, -32600, "x"},
		{"over 16 MiB", huge, -32600, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.send(tc.line)
			r := c.recv()
			e, _ := r["error"].(map[string]any)
			if e == nil || e["code"] != tc.code || r["id"] != tc.id {
				t.Fatalf("answer to %s: %.300v, want error %v with id %v", tc.name, r, tc.code, tc.id)
			}
			if _, has := r["id"]; !has {
				t.Errorf("the answer has no id (JSON-RPC wants \"id\": null): %v", r)
			}
			id := fmt.Sprintf("ping%d", i)
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"ping"}`, id))
			if r := c.recv(); r["id"] != id || r["result"] == nil {
				t.Fatalf("the request after %s was not answered: %v", tc.name, r)
			}
		})
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the session's service %d is gone: %v", pid, err)
	}
	c.stop()
}

// readPid waits (at most 10 s) for a file holding a pid and returns it.
func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s within 10 s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
