package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
)

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

// readArgs returns the raw JSON object of arguments ("{}" when none).
func (c *CallInput) readArgs(stdin io.Reader) ([]byte, error) {
	switch {
	case c.ArgsFile != "":
		b, err := os.ReadFile(c.ArgsFile)
		if err != nil {
			return nil, fmt.Errorf("reading --args-file: %w", err)
		}
		return b, nil
	case c.Args == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading arguments from stdin: %w", err)
		}
		return b, nil
	case c.Args == "":
		return []byte("{}"), nil
	}
	return []byte(c.Args), nil
}
