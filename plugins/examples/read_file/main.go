// Command read_file is the Go plugin twin of toolboxes/default/tools/read_file:
// the same describe document (args, runtime), the same output and the same
// errors, so that the two can back one capability. It prints a text file, or
// lines start..end of it (1-based, inclusive), exactly as stored.
//
// Like the exec tool it declares its runtime on the workspace, the project
// directory chosen at each call ("{workspace}", DESIGN.md §2): it reads
// nothing else, wherever it is built.
//
//	go build -o toolboxes/default/plugins/read_file ./plugins/examples/read_file
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/toolbox-dev/toolbox/plugins/sdk"
	"github.com/toolbox-dev/toolbox/protocol"
)

func main() { sdk.Serve(readFile{}) }

// readFile implements sdk.Tool.
type readFile struct{}

var _ sdk.Tool = readFile{}

// Exit codes, as the exec tool's: 2 for argument errors, 1 for the rest.
const (
	exitFailed = 1
	exitUsage  = 2
)

// binaryProbe is how much of a file is searched for a NUL byte, the rule git
// uses to call a file binary.
const binaryProbe = 8192

func (readFile) Describe() protocol.Describe {
	return protocol.Describe{
		Protocol:    2,
		Slug:        "read_file",
		Description: "Print a text file of the workspace (the project directory), whole or lines start..end (1-based, inclusive), exactly as stored. Relative paths are relative to the workspace; nothing outside it can be read. Refuses directories (use list_dir) and binary files. For long files, read a range.",
		Args: []protocol.Arg{
			{Name: "path", Description: "File to read, relative to the workspace (the project directory) or absolute inside it", Type: "path", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional},
			{Name: "start", Description: "First line to print (1-based; default 1)", Type: "integer >= 1", BackingType: "integer", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashEqual},
			{Name: "end", Description: "Last line to print, inclusive (default: the last line; an end past the file stops at its last line)", Type: "integer >= start", BackingType: "integer", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashEqual},
		},
		EmptyResult:     &protocol.EmptyResult{Tag: "AddMessage", Contents: "(the file is empty)"},
		OutputMediaType: "text/plain",
		Check:           true,
		Process:         &protocol.Process{Mode: "oneshot", Output: &protocol.Output{Framing: "chunks"}},
		Runtime: &protocol.Runtime{
			Rundir:  protocol.WorkspaceToken,
			Sandbox: &protocol.Sandbox{FS: &protocol.FS{Read: []string{protocol.WorkspaceToken}}, Net: "none", Tmp: "private"},
			// Each call reads its own file: a warm process serves calls at once.
			Concurrency: 8,
		},
	}
}

// Check: the tool needs nothing but its working directory, the repository.
func (readFile) Check(context.Context) protocol.CheckResult {
	if _, err := os.Stat("."); err != nil {
		return protocol.CheckResult{OK: false, Detail: fmt.Sprintf("the working directory is not readable: %v", err), Fix: "check the tool's rundir and sandbox read paths"}
	}
	return protocol.CheckResult{OK: true, Detail: "reads files itself; needs no external command"}
}

// usageError is an argument error: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func (readFile) Run(ctx context.Context, args sdk.Args, out sdk.Emitter) (int, error) {
	err := run(ctx, args, out)
	if ue := (usageError{}); errors.As(err, &ue) {
		return exitUsage, err
	}
	if err != nil {
		return exitFailed, err
	}
	return 0, nil
}

func run(ctx context.Context, args sdk.Args, out io.Writer) error {
	path := args.String("path")
	start, err := lineArg(args, "start")
	if err != nil {
		return err
	}
	end, err := lineArg(args, "end")
	if err != nil {
		return err
	}
	if path == "" {
		return usageError{"path is empty"}
	}
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 64<<10)
	probe, err := br.Peek(binaryProbe)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return fmt.Errorf("reading %q: %w", path, err)
	}
	if bytes.IndexByte(probe, 0) >= 0 {
		size := int64(-1)
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
		return fmt.Errorf("%q is a binary file (%d bytes); not printed", path, size)
	}
	if len(probe) == 0 {
		return nil // empty file: the launcher adds the empty-result message
	}
	if start == 0 {
		start = 1
	}
	if end != 0 && end < start {
		return usageError{fmt.Sprintf("end (%d) is before start (%d)", end, start)}
	}
	return copyLines(ctx, br, out, path, start, end)
}

// lineArg reads a line-number argument: absent is 0, else at least 1.
func lineArg(args sdk.Args, name string) (int64, error) {
	n, err := args.Int(name, 0)
	if err != nil {
		return 0, usageError{fmt.Sprintf("%s must be a positive integer, got %q", name, args.String(name))}
	}
	if args.Has(name) && n < 1 {
		return 0, usageError{fmt.Sprintf("%s must be at least 1, got %q", name, args.String(name))}
	}
	return n, nil
}

// open opens path for reading if it is a readable regular file, with the
// exec tool's messages otherwise.
func open(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no such file: %q", path)
	case err != nil:
		return nil, fmt.Errorf("reading %q: %w", path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("%q is a directory: use list_dir", path)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%q is not a regular file", path)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("%q is not readable: permission denied", path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	return f, nil
}

// copyLines writes lines start..end (end 0: to the last line) of r to out,
// bytes as stored: a last line without a newline stays without one.
func copyLines(ctx context.Context, r *bufio.Reader, out io.Writer, path string, start, end int64) error {
	w := bufio.NewWriterSize(out, 64<<10)
	var line int64 // lines fully or partly read so far
	for {
		if line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			if line+1 >= start && (end == 0 || line+1 <= end) {
				if _, werr := w.Write(chunk); werr != nil {
					return werr
				}
			}
			if err != bufio.ErrBufferFull {
				line++ // a complete line, or the unterminated last one
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF || (end != 0 && line >= end) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %q: %w", path, err)
		}
	}
	if start > line {
		return fmt.Errorf("start (%d) is past the end of %q (%d lines)", start, path, line)
	}
	return w.Flush()
}
