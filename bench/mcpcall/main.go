// Command mcpcall times tool calls against each other in one run: MCP
// servers over stdio (tools/call through the official Go SDK's client) and
// plain commands (each "call" execs the command and waits). Targets are
// taken in turn, call by call (or round by round with -c), so that machine
// noise hits all alike; it prints each one's start-up, median and 99th
// percentile, and the ratio of each median to the first target's.
//
// Usage:
//
//	mcpcall [-n 200] [-warmup 20] [-c 1] NAME KIND ARGS 'CMD ARGS...' ...
//
// KIND is an MCP tool name, the server being CMD; or "exec", for a command
// run once per call (ARGS is then ignored, write -). ARGS is the tool's
// arguments as one JSON object. Commands are split into words as a POSIX
// shell would split them, without expanding anything: spaces separate
// words, '...' and "..." quote (a path with spaces: '/my dir/toolbox'),
// a backslash escapes the next character (inside "...", only \ and ");
// an unterminated quote stops the run.
// With -c N each round sends N calls at once to one target (each call's
// latency is counted). A call that fails, or whose result is an error,
// stops the run with the reason.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type target struct {
	name, tool string
	args       map[string]any
	argv       []string
	cs         *mcp.ClientSession
	startup    time.Duration
	ds         []time.Duration
}

func main() {
	n := flag.Int("n", 200, "calls (rounds with -c) per target")
	warm := flag.Int("warmup", 20, "untimed calls per target first")
	conc := flag.Int("c", 1, "calls sent at once per round")
	flag.Parse()
	rest := flag.Args()
	if len(rest) < 4 || len(rest)%4 != 0 {
		fmt.Fprintln(os.Stderr, "usage: mcpcall [-n N] [-warmup N] [-c N] NAME KIND ARGS 'CMD ARGS...' ...")
		os.Exit(2)
	}
	ctx := context.Background()
	var ts []*target
	for i := 0; i < len(rest); i += 4 {
		argv, err := splitWords(rest[i+3])
		if err != nil || len(argv) == 0 {
			fail(fmt.Errorf("%s: command %q: %v (quote a path holding spaces: '/my dir/x')", rest[i], rest[i+3], err))
		}
		t := &target{name: rest[i], tool: rest[i+1], argv: argv}
		if t.tool != "exec" {
			if err := json.Unmarshal([]byte(rest[i+2]), &t.args); err != nil {
				fail(fmt.Errorf("%s: arguments: %w", t.name, err))
			}
			if err := t.connect(ctx); err != nil {
				fail(err)
			}
			defer t.cs.Close()
		}
		ts = append(ts, t)
	}
	for i := 0; i < *warm; i++ {
		for _, t := range ts {
			t.round(ctx, *conc, false)
		}
	}
	for i := 0; i < *n; i++ {
		for _, t := range ts {
			t.round(ctx, *conc, true)
		}
	}
	ref := pct(ts[0].ds, 50)
	fmt.Printf("%-22s %12s %10s %10s %8s\n", "target", "start-up", "p50", "p99", "p50 ratio")
	for _, t := range ts {
		p50 := pct(t.ds, 50)
		up := "-"
		if t.startup > 0 {
			up = t.startup.Round(10 * time.Microsecond).String()
		}
		fmt.Printf("%-22s %12s %10s %10s %7.2fx\n", t.name, up, p50.Round(10*time.Microsecond),
			pct(t.ds, 99).Round(10*time.Microsecond), float64(p50)/float64(ref))
	}
}

// connect starts the server and initializes a session with it.
func (t *target) connect(ctx context.Context) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpcall", Version: "1"}, nil)
	cmd := exec.Command(t.argv[0], t.argv[1:]...)
	cmd.Stderr = os.Stderr
	begun := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("%s: connecting: %w", t.name, err)
	}
	t.startup = time.Since(begun)
	t.cs = cs
	return nil
}

// round makes conc calls at once and records each one's latency.
func (t *target) round(ctx context.Context, conc int, record bool) {
	ds := make([]time.Duration, conc)
	var wg sync.WaitGroup
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			begun := time.Now()
			if err := t.call(ctx); err != nil {
				fail(fmt.Errorf("%s: %w", t.name, err))
			}
			ds[i] = time.Since(begun)
		}()
	}
	wg.Wait()
	if record {
		t.ds = append(t.ds, ds...)
	}
}

func (t *target) call(ctx context.Context) error {
	if t.tool == "exec" {
		cmd := exec.Command(t.argv[0], t.argv[1:]...)
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	res, err := t.cs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: t.args})
	if err != nil {
		return err
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		return fmt.Errorf("tool error: %s", b)
	}
	return nil
}

// pct is the p-th percentile of ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mcpcall:", err)
	os.Exit(1)
}

// splitWords splits s into words as a POSIX shell would, expanding
// nothing: unquoted blanks separate words; '...' is literal; "..." is
// literal but for \\ and \"; an unquoted backslash escapes the next
// character. An unterminated quote or a trailing backslash is an error.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' at byte %d", i)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated \"")
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			w.WriteByte(s[i])
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
