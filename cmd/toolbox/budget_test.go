package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/server/mcpserver"
)

// floodShapes are tools that print a lot of stdout in one pathological
// shape each: framing, and the shell pipeline that prints.
var floodShapes = []struct {
	name, framing, print string
	empty                bool // blank jsonl lines are no events: nothing to cut
}{
	// 64 million empty lines: each once cost a string header or an Event.
	{"newlines", "lines", `head -c 64000000 /dev/zero | tr '\000' '\n'`, false},
	{"newlines_jsonl", "jsonl", `head -c 64000000 /dev/zero | tr '\000' '\n'`, true},
	// One line of 64 MB, never ended.
	{"huge_line", "jsonl", `head -c 64000000 /dev/zero | tr '\000' 'x'`, false},
	// 8 million tiny events.
	{"tiny_events", "jsonl", `yes 1 | head -c 16000000`, false},
	// 64 MB of NUL bytes: 6 bytes each in JSON.
	{"chunks", "chunks", `head -c 64000000 /dev/zero`, false},
}

// floodToolbox writes and locks a toolbox of the flood tools and returns
// its toolbox file.
func floodToolbox(t *testing.T) string {
	t.Helper()
	toolbox, _ := programs(t)
	dir := t.TempDir()
	var hcl strings.Builder
	for _, s := range floodShapes {
		writeFile(t, dir, "tools/"+s.name, fmt.Sprintf(`#!/bin/sh
if [ "$1" = describe ]; then
  echo '{"protocol":2,"slug":"%s","description":"floods","args":[],"process":{"output":{"framing":"%s"}}}'
  exit 0
fi
%s
`, s.name, s.framing, s.print), 0o755)
		fmt.Fprintf(&hcl, "tool %q { path = \"tools/%s\" }\n", s.name, s.name)
	}
	path := writeFile(t, dir, "toolbox.hcl", hcl.String(), 0o644)
	if out, err := limited(toolbox, "lock", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("toolbox lock: %v\n%s", err, out)
	}
	return path
}

// runBound is the peak memory allowed to one `toolbox run`, with or
// without --json: the output budget four times over (what is kept, its
// encoding, and the garbage the collector has not returned yet) and 32 MiB
// for the program itself. Before the budget counted what it kept, 100 MB
// of newlines took 7 GB.
const runBound = 4*launcher.MaxResultBytes + 32<<20

// mcpBound is the same for a whole `toolbox mcp` session: its results are
// budgeted to mcpserver.DefaultMaxTextBytes (one 25 MB call took 1.4 GB).
const mcpBound = 16*mcpserver.DefaultMaxTextBytes + 48<<20

// TestRunMemoryBound: `toolbox run` of each pathological shape, plain and
// --json, stays within runBound, its plain stdout whole (every byte the
// tool printed) and its --json result truncated as the budget says.
func TestRunMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("prints hundreds of megabytes")
	}
	toolbox, _ := programs(t)
	hcl := floodToolbox(t)
	for _, s := range floodShapes {
		for _, asJSON := range []bool{false, true} {
			name := s.name
			args := []string{toolbox, "run", "-f", hcl, s.name}
			if asJSON {
				name += "_json"
				args = append(args, "--json")
			}
			t.Run(name, func(t *testing.T) {
				out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
				if err != nil {
					t.Fatal(err)
				}
				defer out.Close()
				cmd := limited(args...)
				cmd.Stdout = out
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("toolbox run: %v\n%s", err, stderr.String())
				}
				rss := peakRSS(t, cmd)
				info, err := out.Stat()
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("peak RSS %d MiB, stdout %d bytes", rss>>20, info.Size())
				if rss > runBound {
					t.Errorf("peak RSS %d MiB, more than the %d MiB bound", rss>>20, runBound>>20)
				}
				if !asJSON && info.Size() < 16_000_000 {
					t.Errorf("plain stdout has %d bytes, want all the tool printed", info.Size())
				}
				if asJSON && info.Size() > 2*launcher.MaxResultBytes {
					t.Errorf("--json wrote %d bytes, more than the budget allows", info.Size())
				}
			})
		}
	}
}

// TestMCPMemoryBound: one `toolbox mcp` session calls each flood tool; its
// peak memory stays within mcpBound and every call is answered, saying the
// result was truncated.
func TestMCPMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("prints hundreds of megabytes")
	}
	c := startMCP(t, floodToolbox(t))
	for i, s := range floodShapes {
		r := c.call(fmt.Sprintf("call%d", i), s.name)
		res, _ := r["result"].(map[string]any)
		if res == nil {
			t.Errorf("%s: no result: %v", s.name, r)
			continue
		}
		text := fmt.Sprint(res)
		if !s.empty && !strings.Contains(text, "truncated") && !strings.Contains(text, "only what fits") {
			t.Errorf("%s: the result does not say it was cut: %.300s", s.name, text)
		}
	}
	c.stop()
	rss := peakRSS(t, c.cmd)
	t.Logf("peak RSS of the session: %d MiB", rss>>20)
	if rss > mcpBound {
		t.Errorf("peak RSS %d MiB, more than the %d MiB bound", rss>>20, mcpBound>>20)
	}
}
