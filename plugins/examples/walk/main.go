// Command walk is a streaming Go plugin: it walks a directory of the
// repository and emits one JSON event per file, as it finds it:
//
//	{"path": "compiler/doc.go", "size": 1234, "lines": 40}
//	{"path": "logo.png", "size": 5120, "binary": true}
//
// path is relative to the walked directory, with "/" separators; size is in
// bytes; lines is the line count of a text file (a last line without a
// newline counts), absent for binary files (a NUL byte in the first 8 KiB)
// and for files over 16 MiB. Hidden entries are skipped unless all is true;
// .git is never entered. Symbolic links and special files are not reported.
// After max_files files (default 10000) it stops with exit code 1, saying
// how to narrow the walk.
//
// Its runtime is declared like the exec tools of toolboxes/default: it reads
// the workspace ("{workspace}", DESIGN.md §2) and nothing else.
//
//	go build -o toolboxes/default/plugins/walk ./plugins/examples/walk
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/toolbox-dev/toolbox/plugins/sdk"
	"github.com/toolbox-dev/toolbox/protocol"
)

func main() { sdk.Serve(walk{}) }

// walk implements sdk.Tool.
type walk struct{}

var _ sdk.Tool = walk{}

const (
	exitFailed = 1
	exitUsage  = 2

	defaultMaxFiles = 10000
	// binaryProbe is how much of a file is searched for a NUL byte.
	binaryProbe = 8192
	// maxCounted bounds the size of a file whose lines are counted.
	maxCounted = 16 << 20
)

// Event is what walk emits for each file.
type Event struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Lines  *int64 `json:"lines,omitempty"`
	Binary bool   `json:"binary,omitempty"`
}

// eventSchema is the JSON Schema of Event, declared as process.output.event.
const eventSchema = `{
  "type": "object",
  "required": ["path", "size"],
  "properties": {
    "path": {"type": "string", "description": "file path relative to the walked directory"},
    "size": {"type": "integer", "minimum": 0, "description": "size in bytes"},
    "lines": {"type": "integer", "minimum": 0, "description": "line count of a text file"},
    "binary": {"type": "boolean", "description": "true for a binary file (no line count)"}
  },
  "additionalProperties": false
}`

func (walk) Describe() protocol.Describe {
	return protocol.Describe{
		Protocol:    2,
		Slug:        "walk",
		Description: "Walk a directory of the workspace (the project directory) and stream one event per file: its path relative to the directory, its size in bytes and, for text files, its line count. Hidden entries are skipped unless all is true; .git is never entered. Use it to see how big a code base or a subtree is, or to find files by name with glob.",
		Args: []protocol.Arg{
			{Name: "path", Description: "Directory to walk, relative to the workspace or absolute inside it ('.' is the workspace)", Type: "path", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional},
			{Name: "glob", Description: "Only files whose name matches this pattern, e.g. *.go (default: every file)", Type: "glob", BackingType: "string", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashEqual},
			{Name: "all", Description: "Also walk hidden entries (default false)", Type: "boolean", BackingType: "boolean", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashEqual},
			{Name: "max_files", Description: "Stop after this many files (default 10000)", Type: "integer >= 1", BackingType: "integer", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashEqual},
		},
		Check: true,
		Process: &protocol.Process{
			Mode:   "stream",
			Output: &protocol.Output{Framing: "jsonl", Event: json.RawMessage(eventSchema)},
		},
		Runtime: &protocol.Runtime{
			Rundir:  protocol.WorkspaceToken,
			Sandbox: &protocol.Sandbox{FS: &protocol.FS{Read: []string{protocol.WorkspaceToken}}, Net: "none", Tmp: "private"},
		},
	}
}

func (walk) Check(context.Context) protocol.CheckResult {
	if _, err := os.ReadDir("."); err != nil {
		return protocol.CheckResult{OK: false, Detail: fmt.Sprintf("the working directory is not readable: %v", err), Fix: "check the tool's rundir and sandbox read paths"}
	}
	return protocol.CheckResult{OK: true, Detail: "walks directories itself; needs no external command"}
}

// usageError is an argument error: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func (walk) Run(ctx context.Context, args sdk.Args, out sdk.Emitter) (int, error) {
	o, err := options(args)
	if err == nil {
		err = o.walk(ctx, out)
	}
	if ue := (usageError{}); errors.As(err, &ue) {
		return exitUsage, err
	}
	if err != nil {
		return exitFailed, err
	}
	return 0, nil
}

type walkOptions struct {
	root     string
	glob     string
	all      bool
	maxFiles int64
}

func options(args sdk.Args) (walkOptions, error) {
	o := walkOptions{root: args.String("path"), glob: args.String("glob")}
	if o.root == "" {
		return o, usageError{"path is empty"}
	}
	if _, err := path.Match(o.glob, ""); err != nil {
		return o, usageError{fmt.Sprintf("glob %q is not a valid pattern: %v", o.glob, err)}
	}
	var err error
	if o.all, err = args.Bool("all", false); err != nil {
		return o, usageError{err.Error()}
	}
	if o.maxFiles, err = args.Int("max_files", defaultMaxFiles); err != nil || o.maxFiles < 1 {
		return o, usageError{fmt.Sprintf("max_files must be a positive integer, got %q", args.String("max_files"))}
	}
	return o, nil
}

// errEnough stops the walk at max_files.
var errEnough = errors.New("enough files")

func (o walkOptions) walk(ctx context.Context, out sdk.Emitter) error {
	fi, err := os.Stat(o.root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no such directory: %q", o.root)
	case err != nil:
		return fmt.Errorf("walking %q: %w", o.root, err)
	case !fi.IsDir():
		return fmt.Errorf("%q is not a directory: use read_file", o.root)
	}
	var n int64
	err = filepath.WalkDir(o.root, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if p == o.root {
				return err
			}
			return nil // an unreadable subdirectory is skipped, not fatal
		}
		if p == o.root {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if name == ".git" || (!o.all && strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || (!o.all && strings.HasPrefix(name, ".")) {
			return nil
		}
		if ok, _ := path.Match(o.glob, name); o.glob != "" && !ok {
			return nil
		}
		if n == o.maxFiles {
			return errEnough
		}
		n++
		rel, _ := filepath.Rel(o.root, p)
		return out.Emit(describeFile(p, filepath.ToSlash(rel)))
	})
	if errors.Is(err, errEnough) {
		return fmt.Errorf("stopped at max_files (%d): narrow the walk with glob or a subdirectory", o.maxFiles)
	}
	if err != nil {
		return fmt.Errorf("walking %q: %w", o.root, err)
	}
	return nil
}

// describeFile makes the event of the regular file at p; a file that
// cannot be read gets its size only.
func describeFile(p, rel string) Event {
	ev := Event{Path: rel}
	f, err := os.Open(p)
	if err != nil {
		return ev
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ev
	}
	ev.Size = fi.Size()
	buf := make([]byte, 64<<10)
	var lines int64
	unterminated := false
	for first := true; ; first = false {
		k, err := f.Read(buf)
		if first && bytes.IndexByte(buf[:min(k, binaryProbe)], 0) >= 0 {
			ev.Binary = true
			return ev
		}
		if first && ev.Size > maxCounted {
			return ev
		}
		if k > 0 {
			lines += int64(bytes.Count(buf[:k], []byte{'\n'}))
			unterminated = buf[k-1] != '\n'

		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return ev
		}
	}
	if unterminated {
		lines++ // an unterminated last line
	}
	ev.Lines = &lines
	return ev
}
