package corecmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/cmd/internal/cli"
)

// openPTY opens a pseudo-terminal: the controlling side to read from, and
// the terminal a program writes to.
func openPTY(t *testing.T) (ctrl, tty *os.File) {
	t.Helper()
	ctrl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ctrl.Close() })
	if err := unix.IoctlSetPointerInt(int(ctrl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ctrl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return ctrl, tty
}

// TestLockProgressOnTerminal: on a terminal, lock names each tool as its
// probes finish, then prints its summary; on anything else it prints only
// the summary (the script cli_answers checks the exact lines).
func TestLockProgressOnTerminal(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b"} {
		write("tools/"+n, "#!/bin/sh\necho '{\"slug\":\""+n+"\",\"description\":\"d\",\"args\":[]}'\n", 0o755)
	}
	write("toolbox.hcl", "tool \"a\" { path = \"tools/a\" }\ntool \"b\" { path = \"tools/b\" }\n", 0o644)

	ctrl, tty := openPTY(t)
	if !cli.IsTerminal(tty) || cli.IsTerminal(&bytes.Buffer{}) {
		t.Fatal("IsTerminal does not tell a terminal from a buffer")
	}
	if f, err := os.CreateTemp(dir, "plain"); err == nil {
		if cli.IsTerminal(f) {
			t.Error("a regular file is taken for a terminal")
		}
		f.Close()
	}
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, ctrl) // ends with EIO once the terminal is closed
		got <- b.String()
	}()
	g := &cli.Globals{File: filepath.Join(dir, "toolbox.hcl"), IO: cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: tty}}
	if err := lockRun(context.Background(), &LockOptions{Globals: g}); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out := strings.ReplaceAll(<-got, "\r\n", "\n")
	for _, re := range []string{
		`(?m)^\[1/2\] [ab]: unverified \(none, [0-9.]+[µm]?s\)$`,
		`(?m)^\[2/2\] [ab]: unverified \(none, [0-9.]+[µm]?s\)$`,
		`(?m)^locked 2 tools and 0 capabilities in .*toolbox.lock.json$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("terminal output lacks %s:\n%s", re, out)
		}
	}
}
