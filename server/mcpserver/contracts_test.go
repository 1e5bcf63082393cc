package mcpserver

import (
	"encoding/json"
	"github.com/toolbox-dev/toolbox/manifest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/launcher/supervisor"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// loggedProcesses lists the processes named by the logging notifications
// received so far.
func (e *env) loggedProcesses() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ps []string
	for _, l := range e.logs {
		data, _ := json.Marshal(l)
		var m supervisor.Mail
		_ = json.Unmarshal(data, &m)
		ps = append(ps, m.Process)
	}
	return ps
}

// A command whose result process_run (or process_status with a wait)
// delivered inline is neither in the inbox nor notified; one that ends
// after the answer is notified once.
func TestInlineResultIsNotNotifiedAgain(t *testing.T) {
	f := newFixture(t)
	f.Lock.Builtins = []string{mcpnames.BuiltinProcess}
	f.Lock.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	rehash(t, f, "sandbox = \"none\"\nbuiltin \"process\" { unconfined = true }\n")
	e := f.start(t, nil)
	if err := e.cs.SetLoggingLevel(ctx(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	var inline, waited, later supervisor.Status
	decode(t, e.call("process_run", map[string]any{"command": "echo done"}), &inline)
	decode(t, e.call("process_run", map[string]any{"command": "sleep 0.3", "wait_seconds": 0}), &waited)
	decode(t, e.call("process_status", map[string]any{"process": waited.Process, "wait_seconds": 10}), &waited)
	gate := filepath.Join(t.TempDir(), "gate")
	decode(t, e.call("process_run", map[string]any{"command": "while [ ! -e " + gate + " ]; do sleep 0.01; done", "wait_seconds": 0}), &later)
	if !inline.Done || !waited.Done || later.Done {
		t.Fatalf("states: %s %s %s", inline.Status, waited.Status, later.Status)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil { // the last one ends now
		t.Fatal(err)
	}
	// The last one's completion is notified; it is mailed after the other
	// two finished, so by then theirs would have been sent too.
	testenv.Eventually(t, 10*time.Second, "the notification of "+later.Process, func() bool {
		return strings.Contains(strings.Join(e.loggedProcesses(), " "), later.Process)
	})
	if got := e.loggedProcesses(); len(got) != 1 {
		t.Errorf("notified processes %v, want only %s", got, later.Process)
	}
	var inbox supervisor.InboxPage
	decode(t, e.call("inbox", map[string]any{}), &inbox)
	if len(inbox.Mails) != 1 || inbox.Mails[0].Process != later.Process {
		t.Errorf("inbox = %+v, want the one completion nobody saw", inbox.Mails)
	}
}

// wait_seconds above 30 is capped, not refused: the schemas declare no
// maximum (a client that validates would refuse 60), and the server caps.
func TestWaitSecondsAreCappedNotRefused(t *testing.T) {
	l := newFixture(t).Lock
	l.Builtins = []string{mcpnames.BuiltinProcess}
	l.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	seen := 0
	for _, d := range mcpnames.Definitions(l, t.TempDir()) {
		switch d.Name {
		case "processes", "process_run", "process_status":
		default:
			continue
		}
		seen++
		props, _ := d.InputSchema["properties"].(map[string]any)
		w, _ := props["wait_seconds"].(map[string]any)
		desc, _ := w["description"].(string)
		if _, ok := w["maximum"]; ok || !strings.Contains(desc, "capped at 30") {
			t.Errorf("%s: wait_seconds = %v, want no maximum and the cap said", d.Name, w)
		}
	}
	if seen != 3 {
		t.Errorf("found %d of the 3 tools with wait_seconds", seen)
	}
	if got := seconds(120); got != supervisor.MaxWait {
		t.Errorf("seconds(120) = %s, want %s", got, supervisor.MaxWait)
	}
	f := newFixture(t)
	f.Lock.Builtins = []string{mcpnames.BuiltinProcess}
	f.Lock.Process = &manifest.ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	rehash(t, f, "sandbox = \"none\"\nbuiltin \"process\" { unconfined = true }\n")
	e := f.start(t, nil)
	var st supervisor.Status
	res := e.call("process_run", map[string]any{"command": "echo hi", "wait_seconds": 90})
	wantOK(t, res)
	decode(t, res, &st)
	if !st.Done || st.Stdout == nil || st.Stdout.Text != "hi\n" {
		t.Errorf("process_run with wait_seconds 90 = %+v", st)
	}
}
