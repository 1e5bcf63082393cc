package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
)

// The plain (not --json) output of the process commands: data on stdout
// (events, output, tables), hints on stderr.

// printEvents writes one line per event: a valid event as compact JSON,
// an invalid one as its raw line, with the reason on errw.
func printEvents(out, errw io.Writer, events []launcher.Event) {
	for i, e := range events {
		if e.Invalid {
			fmt.Fprintln(out, e.Raw)
			fmt.Fprintf(errw, "toolbox: event %d is invalid: %s\n", i+1, e.Error)
			continue
		}
		fmt.Fprintln(out, compactEvent(e.Event))
	}
}

// compactEvent is an event's JSON on one line (as it is when it is not
// JSON, which a valid event always is).
func compactEvent(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// ref is how a person names the process: its name when it has one.
func ref(st supervisor.Status) string {
	if st.Name != "" {
		return st.Process + " (" + st.Name + ")"
	}
	return st.Process
}

// outcome is the state and what explains it: "exited (code 0)",
// "failed (code 2): reason", "running".
func outcome(st supervisor.Status) string {
	s := string(st.Status)
	if st.ExitCode != nil {
		s += fmt.Sprintf(" (code %d)", *st.ExitCode)
	}
	if st.Restarts > 0 {
		s += fmt.Sprintf(" after %d restarts", st.Restarts)
	}
	// The supervisor's reason for a plain non-zero exit only repeats the
	// code.
	if st.Reason != "" && (st.ExitCode == nil || st.Reason != fmt.Sprintf("exit code %d", *st.ExitCode)) {
		s += ": " + st.Reason
	}
	return s
}

// summaryLine is one line about a process: "p1a2b3c watch_log: stopped (code 143)".
func summaryLine(st supervisor.Status) string {
	return fmt.Sprintf("%s %s: %s", ref(st), toolOf(st), outcome(st))
}

// toolOf is the tool, or the shell command of a background command.
func toolOf(st supervisor.Status) string {
	if st.Kind == supervisor.KindCommand && st.Command != "" {
		return fmt.Sprintf("%s %q", st.Tool, oneLine(st.Command, 60))
	}
	return st.Tool
}

// oneLine cuts s at its first newline and at n bytes (on a character
// boundary), marking a cut with "...".
func oneLine(s string, n int) string {
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = s[:i], true
	}
	if len(s) > n {
		s, cut = summaryCut(s, n), true
	}
	if cut && !strings.HasSuffix(s, "...") {
		s += "..."
	}
	return s
}

// summaryCut cuts s to at most n bytes on a character boundary.
func summaryCut(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// printList writes the process table.
func printList(out io.Writer, list []supervisor.Status, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PROCESS\tKIND\tTOOL\tNAME\tSTATUS\tEXIT\tSTARTED\tLABEL")
	for _, st := range list {
		exit := "-"
		if st.ExitCode != nil {
			exit = fmt.Sprint(*st.ExitCode)
		}
		label := st.Label
		if label == "" && st.Command != "" {
			label = oneLine(st.Command, 40)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", st.Process, st.Kind, st.Tool, dash(st.Name),
			st.Status, exit, age(st.Started, now), dash(label))
	}
	return w.Flush()
}

// Plural is "1 event", "2 events": n and word, with an s unless n is 1
// (words whose plural is not word+"s" use PluralOf).
func Plural(n int, word string) string { return PluralOf(n, word, word+"s") }

// PluralOf is n and one when n is 1, else n and many: "1 capability",
// "0 capabilities".
func PluralOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age is how long ago t was, to the second ("3m12s ago").
func age(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}

// printStatus writes a status as "key: value" lines, then the tail of the
// output when there is one.
func printStatus(out io.Writer, st supervisor.Status) {
	w := tabwriter.NewWriter(out, 0, 4, 1, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%s:\t%s\n", k, v)
		}
	}
	line("process", st.Process)
	line("name", st.Name)
	line("label", st.Label)
	line("kind", string(st.Kind))
	line("tool", st.Tool)
	line("capability", st.Capability)
	line("command", st.Command)
	line("status", fmt.Sprintf("%s since %s", st.Status, clock(st.Since)))
	if st.Runtime != nil {
		line("runtime", runtimeLine(st.Runtime))
	}
	if st.ExitCode != nil {
		line("exit code", fmt.Sprint(*st.ExitCode))
	}
	line("reason", st.Reason)
	if st.Restarts > 0 {
		line("restarts", fmt.Sprint(st.Restarts))
	}
	if st.PID > 0 {
		line("pid", fmt.Sprint(st.PID))
	}
	line("started", clock(st.Started))
	if st.Ended != nil {
		line("ended", clock(*st.Ended))
	}
	line("output", fmt.Sprintf("bytes %d..%d (toolbox processes output %s --cursor %d)", st.Output.Earliest, st.Output.Head, st.Process, st.Output.Earliest))
	if st.Logs != nil {
		line("logs", st.Logs.Stdout+" "+st.Logs.Stderr)
	}
	for _, n := range st.Notes {
		line("note", n)
	}
	w.Flush()
	if len(st.Events) > 0 {
		fmt.Fprintf(out, "--- events (the last %d of %d) ---\n", len(st.Events), st.EventCount)
		printMarkedEvents(out, "", st.Events)
	}
	printStreamTail(out, "stdout", st.Stdout)
	printStreamTail(out, "stderr", st.Stderr)
}

// printStreamTail writes the end of one stream under a line naming it and
// saying how much of it is shown; an empty stream prints nothing.
func printStreamTail(out io.Writer, name string, t *supervisor.StreamTail) {
	if t == nil || t.Written == 0 {
		return
	}
	if t.Truncated {
		fmt.Fprintf(out, "--- %s (the last %d of %d bytes) ---\n", name, len(t.Text), t.Written)
	} else {
		fmt.Fprintf(out, "--- %s (%s) ---\n", name, Plural(int(t.Written), "byte"))
	}
	io.WriteString(out, t.Text)
	if !strings.HasSuffix(t.Text, "\n") {
		fmt.Fprintln(out)
	}
}

// printMail writes one mail: a header line, then its events indented.
func printMail(out io.Writer, m supervisor.Mail) {
	who := m.Process
	if m.Name != "" {
		who += " (" + m.Name + ")"
	}
	head := fmt.Sprintf("#%d %s %s %s %s", m.Seq, clock(m.Time), who, m.Tool, m.Kind)
	switch m.Kind {
	case supervisor.MailEvents:
		head += ": " + Plural(len(m.Events), "event")
		if m.Elided > 0 {
			head += fmt.Sprintf(" (%d more not kept)", m.Elided)
		}
	default:
		st := supervisor.Status{Handle: supervisor.Handle{Status: m.State}, ExitCode: m.ExitCode, Reason: m.Reason, Restarts: m.Restarts}
		head += ": " + outcome(st)
	}
	fmt.Fprintln(out, head)
	printMarkedEvents(out, "  ", m.Events)
}

// printMarkedEvents writes one line per event, each after indent, where
// nothing else tells valid events from invalid ones (the inbox, a status):
// a valid event as compact JSON, an invalid one as "[invalid: REASON] RAW"
// (its raw line and why it is invalid, never passed off as an event).
func printMarkedEvents(out io.Writer, indent string, events []launcher.Event) {
	for _, e := range events {
		if e.Invalid {
			fmt.Fprintf(out, "%s[invalid: %s] %s\n", indent, oneLine(e.Error, 200), oneLine(e.Raw, 4096))
			continue
		}
		fmt.Fprintf(out, "%s%s\n", indent, compactEvent(e.Event))
	}
}
