// Command streamfloor is the floor of the stream benchmark: the least a
// locked launcher can do with a jsonl stream tool's output. It reads the
// tool's event schema from the lock, compiles it once (the same compiler
// toolbox uses, protocol/validate), then reads a file of events line by
// line, validates each line against the schema, and prints it. It exits 1
// at the first invalid event.
//
// Usage: streamfloor LOCK TOOL EVENTS
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/toolbox-dev/toolbox/protocol/validate"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: streamfloor LOCK TOOL EVENTS")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	var lock struct {
		Tools map[string]struct {
			Describe struct {
				Process struct {
					Output struct {
						Event json.RawMessage `json:"event"`
					} `json:"output"`
				} `json:"process"`
			} `json:"describe"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		fail(err)
	}
	t, ok := lock.Tools[os.Args[2]]
	if !ok {
		fail(fmt.Errorf("no tool %q", os.Args[2]))
	}
	v, err := validate.CompileEventSchema(t.Describe.Process.Output.Event)
	if err != nil {
		fail(err)
	}
	in, err := os.Open(os.Args[3])
	if err != nil {
		fail(err)
	}
	defer in.Close()
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if _, err := v.Validate(line); err != nil {
			fail(err)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		fail(err)
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "streamfloor:", err)
	os.Exit(1)
}
