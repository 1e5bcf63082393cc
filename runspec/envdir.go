package runspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// MaxEnvdirValue is the longest first line ReadEnvdir reads from one file,
// in bytes: Linux refuses a single environment string longer than 128 KiB
// (MAX_ARG_STRLEN), so a longer value could never reach the tool anyway.
const MaxEnvdirValue = 128 << 10

// Bounds on a whole envdir: Linux refuses to start a program whose
// arguments and environment together pass ARG_MAX (2 MiB with the default
// stack limit), so a bigger envdir could never reach the tool either.
const (
	// MaxEnvdirFiles is the most directory entries ReadEnvdir reads.
	MaxEnvdirFiles = 1024
	// MaxEnvdirBytes bounds the values of an envdir, summed.
	MaxEnvdirBytes = 1 << 20
)

// ReadEnvdir reads a daemontools envdir: one variable per file in dir, named
// after the file. The rules are daemontools' (see NOTES.md, Processes):
//
//   - names starting with "." are skipped, as are subdirectories;
//   - a name containing "=" is an error naming the file;
//   - an empty file (0 bytes) unsets the variable: its value in the map is nil;
//   - otherwise the value is the first line (the whole file when it has no
//     newline), with trailing spaces and tabs removed, then every NUL byte
//     turned into a newline. A file holding only "\n" sets the empty string.
//
// Symbolic links are followed (a secret is often a link into a vault); a
// link to nothing, or to something that is neither a regular file nor a
// directory (a FIFO would block the launcher), is an error naming the file.
// A first line longer than MaxEnvdirValue, more than MaxEnvdirFiles
// entries or values longer than MaxEnvdirBytes in all are errors. A
// missing dir returns an error wrapping fs.ErrNotExist.
func ReadEnvdir(dir string) (map[string]*string, error) {
	entries, err := readDirBounded(dir, MaxEnvdirFiles)
	if err != nil {
		return nil, fmt.Errorf("reading envdir: %w", err)
	}
	vars := make(map[string]*string, len(entries))
	total := 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		if strings.Contains(name, "=") {
			return nil, fmt.Errorf("reading envdir: file %q: a variable name cannot contain \"=\"", path)
		}
		info, err := os.Stat(path) // follows links
		if err != nil {
			return nil, fmt.Errorf("reading envdir: %w", err)
		}
		if info.IsDir() {
			continue
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("reading envdir: file %q is not a regular file", path)
		}
		value, err := readEnvdirValue(path)
		if err != nil {
			return nil, fmt.Errorf("reading envdir: %w", err)
		}
		if value != nil {
			if total += len(*value); total > MaxEnvdirBytes {
				return nil, fmt.Errorf("reading envdir %q: its values are longer than %d bytes in all (at file %q)", dir, MaxEnvdirBytes, name)
			}
		}
		vars[name] = value
	}
	return vars, nil
}

// readDirBounded lists dir, refusing one of more than max entries
// without reading them all.
func readDirBounded(dir string, max int) ([]os.DirEntry, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(max + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(entries) > max {
		return nil, fmt.Errorf("%q holds more than %d entries", dir, max)
	}
	return entries, nil
}

// readEnvdirValue reads one envdir file: nil for an empty file, else its
// first line trimmed and with NULs turned into newlines. It reads at most
// MaxEnvdirValue+1 bytes, enough to find the end of any acceptable line.
func readEnvdirValue(path string) (*string, error) {
	f, err := inputfile.Open(path) // a FIFO swapped in after the Stat is refused, not waited on
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxEnvdirValue+1))
	if err != nil {
		return nil, fmt.Errorf("file %q: %w", path, err)
	}
	if len(data) == 0 {
		return nil, nil // an empty file unsets the variable
	}
	line, _, found := bytes.Cut(data, []byte("\n"))
	if !found && len(line) > MaxEnvdirValue {
		return nil, fmt.Errorf("file %q: the first line is longer than %d bytes", path, MaxEnvdirValue)
	}
	line = bytes.TrimRight(line, " \t")
	value := strings.ReplaceAll(string(line), "\x00", "\n")
	return &value, nil
}
