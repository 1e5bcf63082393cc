package supervisor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/protocol"
)

// eventMails returns the sizes of the session's event mails (events kept
// + elided), once the process is finished.
func eventMails(t testing.TB, s *Supervisor, session string) (sizes []int, mails []Mail) {
	t.Helper()
	pg, err := s.Inbox(session, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pg.Mails {
		if m.Kind == MailEvents {
			sizes = append(sizes, len(m.Events)+m.Elided)
			mails = append(mails, m)
		}
	}
	return sizes, mails
}

func chatty(digest *protocol.Digest, script string) *protocol.Describe {
	return describe("chatty", protocol.ProcessService, &protocol.Process{
		Ready:  readyLineAt(`^ready$`),
		Digest: digest,
		Output: &protocol.Output{Event: json.RawMessage(`{"type":"object","required":["n"]}`)},
	}, nil)
}

func TestMailDigestPerRound(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "chatty", `echo ready; for i in 1 2 3; do echo "{\"n\":$i}"; done; sleep 0.8; echo '{"n":4}'; echo '{"bad":1}'; sleep 0.5; exit 0`, chatty(nil, ""))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "chatty", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	awaitExitMail(t, s, "sess", h.Process)
	sizes, mails := eventMails(t, s, "sess")
	if len(sizes) != 2 || sizes[0] != 3 || sizes[1] != 2 {
		t.Fatalf("digests = %v, want two rounds [3 2]", sizes)
	}
	m := mails[0]
	if m.From != "process:"+h.Process || m.Tool != "chatty" || string(m.Events[0].Event) != `{"n":1}` {
		t.Errorf("first mail = %+v", m)
	}
	if bad := mails[1].Events[1]; !bad.Invalid || bad.Raw != `{"bad":1}` || !strings.Contains(bad.Error, "n") {
		t.Errorf("an event breaking the schema is mailed invalid, got %+v", bad)
	}
	// The completion comes after the events.
	pg, _ := s.Inbox("sess", 0, 0)
	if last := pg.Mails[len(pg.Mails)-1]; last.Kind != MailExit || last.State != StateExited {
		t.Errorf("last mail = %+v", last)
	}
}

func TestMailDigestPerEventsAndSeconds(t *testing.T) {
	f := newFixture(t)
	five := `echo ready; for i in 1 2 3 4 5; do echo "{\"n\":$i}"; done; sleep 0.3; exit 0`
	f.AddTool(t, "chatty", five, chatty(&protocol.Digest{Per: "events", N: 2}, ""))
	s := f.supervisor(t)
	h, err := s.Start(ctxT(t), "sess", "chatty", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Wait(ctxT(t), "sess", h.Process)
	if sizes, _ := eventMails(t, s, "sess"); len(sizes) != 3 || sizes[0] != 2 || sizes[1] != 2 || sizes[2] != 1 {
		t.Errorf("per events 2: digests %v, want [2 2 1]", sizes)
	}

	f.AddTool(t, "ticker", `echo ready; for i in 1 2 3; do echo "{\"n\":$i}"; done; sleep 1.5; echo '{"n":4}'; exec sleep 30`,
		chatty(&protocol.Digest{Per: "seconds", N: 1}, ""))
	h, err = s.Start(ctxT(t), "secs", "ticker", nil, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "two digests", func() bool {
		sizes, _ := eventMails(t, s, "secs")
		return len(sizes) == 2
	})
	if sizes, _ := eventMails(t, s, "secs"); sizes[0] != 3 || sizes[1] != 1 {
		t.Errorf("per seconds 1: digests %v, want [3 1]", sizes)
	}
}

func TestMailDigestIsBounded(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "chatty", `echo ready; i=0; while [ $i -lt 50 ]; do echo "{\"n\":$i}"; i=$((i+1)); done; sleep 0.3; exit 0`, chatty(nil, ""))
	s := f.supervisor(t, func(c *Config) { c.Limits.MailEvents = 5 })
	h, _ := s.Start(ctxT(t), "sess", "chatty", nil, StartOptions{})
	s.Wait(ctxT(t), "sess", h.Process)
	_, mails := eventMails(t, s, "sess")
	if len(mails) != 1 || len(mails[0].Events) != 5 || mails[0].Elided != 45 {
		t.Fatalf("mails = %+v", mails)
	}
	if string(mails[0].Events[4].Event) != `{"n":4}` {
		t.Errorf("kept events are the first of the digest, got %s", mails[0].Events[4].Event)
	}
}

func TestInboxIsReadWithACursorAndNeverConsumed(t *testing.T) {
	f := newFixture(t)
	s := f.supervisor(t)
	ch, cancel, err := s.Subscribe("sess")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	for i := range 3 {
		// Finished after the answer: a completion delivered inline is not
		// mailed.
		wait, open := gate(t)
		st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: wait + "exit " + string(rune('0'+i)), Wait: -1})
		if err != nil {
			t.Fatal(err)
		}
		open()
		awaitExitMail(t, s, "sess", st.Process)
	}
	all, err := s.Inbox("sess", 0, 0)
	if err != nil || len(all.Mails) != 3 || all.Next != 3 || all.Earliest != 1 {
		t.Fatalf("inbox = %+v, %v", all, err)
	}
	again, _ := s.Inbox("sess", 0, 0)
	if len(again.Mails) != 3 {
		t.Error("reading consumed mail")
	}
	page, _ := s.Inbox("sess", 1, 1)
	if len(page.Mails) != 1 || page.Mails[0].Seq != 2 || page.Next != 2 || !page.More {
		t.Errorf("page after 1 = %+v", page)
	}
	if m := all.Mails[2]; m.Kind != MailExit || *m.ExitCode != 2 || m.State != StateFailed {
		t.Errorf("third mail = %+v", m)
	}
	if end, _ := s.Inbox("sess", 3, 0); len(end.Mails) != 0 || end.Next != 3 {
		t.Errorf("at the end = %+v", end)
	}
	if _, err := s.Inbox("sess", 4, 0); !errors.Is(err, ErrCursorAhead) {
		t.Errorf("cursor ahead: %v", err)
	}
	if pg, err := s.Inbox("nobody", 0, 0); err != nil || len(pg.Mails) != 0 {
		t.Errorf("unknown session: %+v, %v", pg, err)
	}
	for i := range 3 {
		select {
		case m := <-ch:
			if m.Seq != int64(i+1) {
				t.Errorf("pushed mail %d has seq %d", i, m.Seq)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("subscription did not receive the mail")
		}
	}
	if err := s.CloseSession(ctxT(t), "sess"); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; ok {
		t.Error("subscription channel still open after CloseSession")
	}
}

func TestMailboxDropsTheOldestAndSaysSo(t *testing.T) {
	b := newMailbox(3, 1<<20)
	for range 5 {
		b.add(Mail{Kind: MailExit})
	}
	pg, err := b.read(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Mails) != 3 || pg.Mails[0].Seq != 3 || !pg.Resumed || pg.Earliest != 3 || !strings.Contains(pg.Note, "dropped") {
		t.Errorf("page = %+v", pg)
	}
	if pg, _ := b.read(2, 10); pg.Resumed {
		t.Error("cursor at the edge of the kept mails is no resume")
	}
	// The byte budget bounds it too.
	b = newMailbox(1000, 2000)
	for range 50 {
		b.add(Mail{Kind: MailExit, Reason: strings.Repeat("x", 500)})
	}
	if b.bytes > 2000 || len(b.mails)-b.m0 > 3 {
		t.Errorf("%d bytes in %d mails kept", b.bytes, len(b.mails)-b.m0)
	}
}

func TestCloseSessionStopsEverything(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	f.AddTool(t, "svc", `trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done`,
		describe("svc", protocol.ProcessService, &protocol.Process{Ready: readyLineAt(`^ready$`)}, nil))
	s := f.supervisor(t, func(c *Config) { c.StateDir = state })
	var pids []int
	for range 2 {
		h, err := s.Start(ctxT(t), "sess", "svc", nil, StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, mustStatus(t, s, "sess", h.Process).PID)
	}
	st, err := s.RunCommand(ctxT(t), "sess", Command{Cmd: "sleep 30", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	pids = append(pids, st.PID)
	keep, err := s.RunCommand(ctxT(t), "other", Command{Cmd: "sleep 30", Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CloseSession(ctxT(t), "sess"); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d outlived its session", pid)
		}
	}
	if list, _ := s.List("sess"); len(list) != 0 {
		t.Errorf("closed session still lists %+v", list)
	}
	recs, _ := ReadRecords(state)
	if len(recs) != 1 || recs[0].ID != keep.Process {
		t.Errorf("records left = %+v, want only the other session's", recs)
	}
	if !alive(keep.PID) {
		t.Error("another session's process was stopped")
	}
}
