package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/server/daemon/wire"
)

// hostile is what a tool may print to take over a terminal: a colour
// (CSI), the clipboard (OSC 52), the window title (OSC 0), a C1 CSI
// encoded in UTF-8 and as a raw byte, a carriage return and a backspace
// that hide text, a bell, DEL; and text that must pass as it is.
const hostile = "a\x1b[31mred\x1b]52;c;cHduZWQ=\x07\x1b]0;title\x07\u009bx\x9by\r\bz\x7f é€日本\tend\n"

// neutralized is hostile as the terminal must receive it.
const neutralized = `a^[[31mred^[]52;c;cHduZWQ=^G^[]0;title^G\u009bx\x9by^M^Hz^? é€日本` + "\tend\n"

func TestNeutralize(t *testing.T) {
	if got, _ := neutralize(nil, []byte(hostile), true); string(got) != neutralized {
		t.Errorf("neutralize:\n got %q\nwant %q", got, neutralized)
	}
	// Split anywhere, even inside a UTF-8 character: the same result.
	for i := 0; i <= len(hostile); i++ {
		var out bytes.Buffer
		w := &termWriter{w: &out}
		for _, part := range []string{hostile[:i], hostile[i:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != neutralized {
			t.Fatalf("split at %d:\n got %q\nwant %q", i, out.String(), neutralized)
		}
	}
	// An incomplete character at the very end is written by Flush.
	var out bytes.Buffer
	w := &termWriter{w: &out}
	_, _ = w.Write([]byte("x\xe2\x82"))
	if out.String() != "x" {
		t.Errorf("wrote %q before the character was complete", out.String())
	}
	_ = w.Flush()
	if out.String() != `x`+"\xe2"+`\x82` { // a lone 0x82 is C1 on an 8-bit terminal
		t.Errorf("after Flush: %q", out.String())
	}
}

// openPTY returns both sides of a new pseudo-terminal, with output
// processing off so that what is written to the terminal side is read
// unchanged from the controller side.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	tio.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(int(pts.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return ptm, pts
}

// drain closes the terminal side and returns what the controller side
// holds (a read then ends with EIO once it is empty).
func drain(t *testing.T, ptm, pts *os.File) string {
	t.Helper()
	pts.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(ptm)
		got <- b
	}()
	select {
	case b := <-got:
		return string(b)
	case <-time.After(10 * time.Second):
		t.Fatal("reading the pseudo-terminal did not end")
		return ""
	}
}

func TestTerminalSafeWrapsTerminalsOnly(t *testing.T) {
	_, pts := openPTY(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var buf bytes.Buffer
	s := TerminalSafe(IOStreams{Out: pts, Err: w})
	if _, ok := s.Out.(*termWriter); !ok {
		t.Error("a terminal stdout is not filtered")
	}
	if s.Err != io.Writer(w) {
		t.Error("a pipe is filtered")
	}
	if s := TerminalSafe(IOStreams{Out: &buf, Err: &buf}); s.Out != io.Writer(&buf) {
		t.Error("a buffer is filtered")
	}
	// Wrapped, a terminal is still one (lock's progress lines asked
	// IsTerminal of the wrapper, and never printed); a pipe is not.
	if !IsTerminal(s.Out) || IsTerminal(s.Err) {
		t.Errorf("IsTerminal: wrapped terminal %v, pipe %v", IsTerminal(s.Out), IsTerminal(s.Err))
	}
}

// runOn runs the command line of cmd with io as the program's streams,
// as Main does, and returns the exit code.
func runOn(g *Globals, streams IOStreams, cmd *cobra.Command, args ...string) int {
	g.IO = streams
	root := &cobra.Command{Use: "toolbox", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().StringVarP(&g.File, "file", "f", "", "")
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.AddCommand(cmd)
	root.SetArgs(args)
	return Execute(root, streams)
}

// TestRunOutputOnATerminal: what `toolbox run` prints of a tool on a
// terminal has its control sequences made visible, on stdout and stderr;
// through a pipe, and with --json on a terminal, the bytes are unchanged.
func TestRunOutputOnATerminal(t *testing.T) {
	f := locktest.New(t, "sandbox = \"none\"\n")
	f.AddTool(t, "noisy", `printf '`+shellOctal(hostile)+`'; printf 'err\033[2J\n' >&2`, nil)
	f.AddTool(t, "colour", `printf '\033[31mred\n'`, nil)
	if err := manifest.Write(f.LockPath, f.Lock); err != nil {
		t.Fatal(err)
	}
	file := f.Dir + "/toolbox.hcl"

	ptm, pts := openPTY(t)
	g := &Globals{}
	if code := runOn(g, TerminalSafe(IOStreams{In: strings.NewReader(""), Out: pts, Err: pts}), NewCmdRun(g, nil), "run", "-f", file, "noisy"); code != 0 {
		t.Fatalf("run on a terminal: exit %d", code)
	}
	if got := drain(t, ptm, pts); got != neutralized+"err^[[2J\n" && got != "err^[[2J\n"+neutralized {
		t.Errorf("run on a terminal printed\n %q\nwant\n %q and the stderr line", got, neutralized)
	}

	ptm, pts = openPTY(t)
	g = &Globals{}
	if code := runOn(g, TerminalSafe(IOStreams{In: strings.NewReader(""), Out: pts, Err: pts}), NewCmdRun(g, nil), "run", "-f", file, "colour", "--json"); code != 0 {
		t.Fatalf("run --json on a terminal: exit %d", code)
	}
	if got := drain(t, ptm, pts); !strings.Contains(got, `"result": "\u001b[31mred\n"`) || strings.Contains(got, "^[") {
		t.Errorf("run --json on a terminal is not the plain JSON: %q", got)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	g = &Globals{}
	var errb bytes.Buffer
	code := runOn(g, TerminalSafe(IOStreams{In: strings.NewReader(""), Out: w, Err: &errb}), NewCmdRun(g, nil), "run", "-f", file, "noisy")
	w.Close()
	got, _ := io.ReadAll(r)
	r.Close()
	if code != 0 || string(got) != hostile || errb.String() != "err\x1b[2J\n" {
		t.Errorf("run into a pipe: exit %d, %q %q; want the bytes unchanged", code, got, errb.String())
	}
}

// TestProcessOutputOnATerminal: processes output and tail, and inbox,
// print a process's output and events with its control sequences made
// visible on a terminal.
func TestProcessOutputOnATerminal(t *testing.T) {
	page := supervisor.Page{Chunks: []supervisor.Chunk{{Stream: supervisor.Stdout, Text: hostile}}}
	mails := supervisor.InboxPage{Mails: []supervisor.Mail{{Seq: 1, Time: since, Process: "p0a1b2c", Tool: "svc", Kind: supervisor.MailEvents,
		Events: []launcher.Event{{Invalid: true, Raw: "\x1b]0;title\x07", Error: "not JSON"}}}}, Next: 1}
	// A page reaches the CLI as JSON: the byte that is not UTF-8 arrives
	// as U+FFFD.
	overJSON := strings.Replace(neutralized, `\x9b`, "\uFFFD", 1)
	fd := &fakeDaemon{results: map[string]any{wire.OpOutput: page, wire.OpTail: page, wire.OpInbox: mails}}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		cmd  func(g *Globals) *cobra.Command
		args []string
		want string
	}{
		{"output", func(g *Globals) *cobra.Command {
			return NewCmdProcessesOutput(g, func(o *ProcessOutputOptions) error { fd.wire(&o.DaemonOptions, nil); return processOutputRun(ctx, o) })
		}, []string{"output", "p0a1b2c"}, overJSON},
		{"tail", func(g *Globals) *cobra.Command {
			return NewCmdProcessesTail(g, func(o *ProcessTailOptions) error { fd.wire(&o.DaemonOptions, nil); return processTailRun(ctx, o) })
		}, []string{"tail", "p0a1b2c"}, overJSON},
		{"inbox", func(g *Globals) *cobra.Command {
			return NewCmdInbox(g, func(o *InboxOptions) error { fd.wire(&o.DaemonOptions, nil); return inboxRun(ctx, o) })
		}, []string{"inbox"}, "] ^[]0;title^G\n"},
	} {
		ptm, pts := openPTY(t)
		g := &Globals{}
		var errb bytes.Buffer
		if code := runOn(g, TerminalSafe(IOStreams{In: strings.NewReader(""), Out: pts, Err: &errb}), c.cmd(g), c.args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errb.String())
		}
		if got := drain(t, ptm, pts); !strings.Contains(got, c.want) || strings.ContainsRune(got, 0x1b) {
			t.Errorf("%s on a terminal printed %q, want %q in it and no ESC", c.name, got, c.want)
		}
	}
}

// shellOctal writes s for printf(1): every byte that is not a printable
// ASCII character, and %, \ and ', as \NNN.
func shellOctal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f && c != '%' && c != '\\' && c != '\'' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\%03o", c)
		}
	}
	return b.String()
}

// TestWriteJSONOnATerminal: --json output (list, status, processes,
// inbox: WriteJSON) goes past the terminal filter; encoding/json escapes
// C0 controls but writes C1 controls raw, and U+009B is CSI to a terminal
// decoding UTF-8. On a terminal they are JSON escapes; into a pipe the
// bytes are encoding/json's, unchanged.
func TestWriteJSONOnATerminal(t *testing.T) {
	v := map[string]string{"description": "a\u009b31m\u0085b\x1b]0;t\x07 é€"}
	var term bytes.Buffer
	if err := WriteJSON(&termWriter{w: &term}, v); err != nil {
		t.Fatal(err)
	}
	want := `{` + "\n" + `  "description": "a\u009b31m\u0085b\u001b]0;t\u0007 é€"` + "\n}\n"
	if term.String() != want {
		t.Errorf("on a terminal:\n got %q\nwant %q", term.String(), want)
	}
	var back map[string]string
	if err := json.Unmarshal(term.Bytes(), &back); err != nil || back["description"] != v["description"] {
		t.Errorf("the escaped JSON decodes to %q (%v), want %q", back["description"], err, v["description"])
	}
	var pipe bytes.Buffer
	if err := WriteJSON(&pipe, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pipe.String(), "a\u009b31m\u0085b") {
		t.Errorf("into a pipe the bytes changed: %q", pipe.String())
	}
}
