package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// MaxArgsBytes bounds the arguments' JSON read from --args-file or stdin
// (--args -): the size of the largest message an MCP client may send
// (the SDK's line limit), so nothing a model could pass is refused.
const MaxArgsBytes = 16 << 20

// CallInput are the flags every call of a tool takes (run, start): the
// arguments as a JSON object (--args, --args - for stdin, --args-file) and
// --backend overrides.
type CallInput struct {
	Args     string
	ArgsFile string
	Backends []string
}

func (c *CallInput) addFlags(f *pflag.FlagSet) {
	f.StringVar(&c.Args, "args", "", "arguments as a JSON object, or - to read it from stdin")
	f.StringVar(&c.ArgsFile, "args-file", "", "read the arguments' JSON object from this file")
	f.StringArrayVar(&c.Backends, "backend", nil, "capability=tool: try this backend first (repeatable; unknown names are ignored)")
}

// check refuses --args together with --args-file.
func (c *CallInput) check() error {
	if c.Args != "" && c.ArgsFile != "" {
		return &UsageError{Err: errors.New("give the arguments with --args or --args-file, not both")}
	}
	return nil
}

// readArgs returns the raw JSON object of arguments ("{}" when none). A
// file or stdin holding more than MaxArgsBytes is refused, and so is an
// --args-file that is not a regular file (a FIFO, /dev/zero).
func (c *CallInput) readArgs(stdin io.Reader) ([]byte, error) {
	switch {
	case c.ArgsFile != "":
		b, err := inputfile.ReadFile(c.ArgsFile, MaxArgsBytes)
		if err != nil {
			return nil, fmt.Errorf("reading --args-file: %w", err)
		}
		return b, nil
	case c.Args == "-":
		b, err := inputfile.ReadAll(stdin, MaxArgsBytes, "stdin")
		if err != nil {
			return nil, fmt.Errorf("reading arguments from stdin: %w", err)
		}
		return b, nil
	case c.Args == "":
		return []byte("{}"), nil
	}
	return []byte(c.Args), nil
}
