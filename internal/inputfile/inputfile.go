// Package inputfile reads the files and streams a user hands to toolbox
// (the toolbox file, the lock, envdir files, --args-file, arguments and
// events on stdin) within a stated size, and refuses what is not a
// regular file before reading a byte of it: a FIFO would block the
// reader forever and a device such as /dev/zero never ends.
//
// It does not decide the limits: each caller passes the one it documents.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is wrapped by the errors of Open and ReadFile for a path
// that names a FIFO, a device, a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is the error of ReadFile and ReadAll for input longer than
// the limit. What names the input (a path, or "stdin").
type TooLargeError struct {
	What string
	// Max is the limit in bytes; Size the input's size when it is known
	// (a regular file), else 0.
	Max, Size int64
}

func (e *TooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("%s is %d bytes, more than the %d bytes toolbox reads", e.What, e.Size, e.Max)
	}
	return fmt.Sprintf("%s is longer than the %d bytes toolbox reads", e.What, e.Max)
}

// Open opens path for reading without blocking (a FIFO with no writer
// would otherwise block the open itself) and returns it only when it is a
// regular file; symbolic links are followed. Other kinds return an error
// wrapping ErrNotRegular. The caller closes the file.
func Open(path string) (*os.File, error) {
	f, err := openNonblocking(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%q is %s: %w", path, kindOf(info.Mode()), ErrNotRegular)
	}
	return f, nil
}

// ReadFile reads the regular file at path whole when it holds at most max
// bytes. A larger file (or one that grows past max while it is read)
// returns a *TooLargeError without reading the rest; another kind of file
// an error wrapping ErrNotRegular; a missing one an error wrapping
// fs.ErrNotExist.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > max {
		return nil, &TooLargeError{What: fmt.Sprintf("%q", path), Max: max, Size: info.Size()}
	}
	// Read into a buffer of the file's size plus one byte (to see it end)
	// rather than growing one: a lock is read at every run.
	buf := make([]byte, info.Size()+1)
	n, err := io.ReadFull(f, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return buf[:n], nil
	case err != nil:
		return nil, err
	}
	// It grew since Stat: read on, within max.
	rest, err := ReadAll(f, max-int64(n), fmt.Sprintf("%q", path))
	if err != nil {
		var tl *TooLargeError
		if errors.As(err, &tl) {
			tl.Max = max
		}
		return nil, err
	}
	return append(buf, rest...), nil
}

// ReadAll reads r to its end when it holds at most max bytes, else
// returns a *TooLargeError naming what once max+1 bytes have been read
// (it never holds more than that).
func ReadAll(r io.Reader, max int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{What: what, Max: max}
	}
	return data, nil
}

func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}
