package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init() // the landlock helper re-executes this binary
	if len(os.Args) > 1 && os.Args[1] == childSupervisorArg {
		os.Exit(childSupervisor(os.Args[2:]))
	}
	os.Exit(testenv.RunWithTmp(m))
}

// fixture is a locktest.Fixture: toolbox.hcl, /bin/sh tools under tools/
// (AddTool) and a hand-built lock whose paths are relative to Dir.
type fixture struct{ *locktest.Fixture }

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return &fixture{locktest.New(t, "sandbox = \"none\"\nbuiltin \"process\" {}\n", "process")}
}

// describe is a v2 describe document of the given mode.
func describe(name, mode string, p *protocol.Process, rt *protocol.Runtime) *protocol.Describe {
	if p == nil {
		p = &protocol.Process{}
	}
	p.Mode = mode
	return &protocol.Describe{Protocol: 2, Slug: name, Description: "test tool", Args: []protocol.Arg{}, Process: p, Runtime: rt}
}

func readyLineAt(re string) *protocol.Ready { return &protocol.Ready{Kind: "line", Match: re} }

func secs(s float64) *float64 { return &s }

// fastConfig is a Config with short timings, so tests do not sleep long.
func (f *fixture) config() Config {
	return Config{
		Lock:          f.Lock,
		LockPath:      f.LockPath,
		CallerEnv:     os.Environ(),
		CompileSchema: compileSchema,
		Timing: Timing{
			StartTimeout:   5 * time.Second,
			StopGrace:      2 * time.Second,
			SendQuiet:      150 * time.Millisecond,
			SendMax:        2 * time.Second,
			RoundGap:       150 * time.Millisecond,
			RestartBackoff: 50 * time.Millisecond,
		},
	}
}

// supervisor returns a Supervisor closed at the end of the test.
func (f *fixture) supervisor(t testing.TB, mods ...func(*Config)) *Supervisor {
	t.Helper()
	cfg := f.config()
	for _, m := range mods {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("closing the supervisor: %v", err)
		}
	})
	return s
}

// compileSchema is the daemon's wiring of the real schema compiler.
func compileSchema(raw json.RawMessage) (EventValidator, error) {
	return validate.CompileEventSchema(raw)
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, state, err := procStartTime(pid)
	return err == nil && state != 'Z' && state != 'X'
}

// readPidFile waits for a file holding a pid and returns it.
func readPidFile(t testing.TB, path string) int {
	t.Helper()
	var pid int
	testenv.Eventually(t, 5*time.Second, "pid file "+path, func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		var n int
		for _, c := range data {
			if c >= '0' && c <= '9' {
				n = n*10 + int(c-'0')
			} else if n > 0 {
				break
			}
		}
		pid = n
		return n > 0
	})
	return pid
}

// killGroup cleans up a process group a test left behind on purpose.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

func mustStatus(t testing.TB, s *Supervisor, session, id string) Status {
	t.Helper()
	st, err := s.Status(context.Background(), session, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func isErr(err, target error) bool { return errors.Is(err, target) }

// gate returns a shell prefix that waits until open is called: a command
// that must not finish before the test says so.
func gate(t testing.TB) (wait string, open func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gate")
	return "while [ ! -e " + path + " ]; do sleep 0.01; done; ", func() {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// awaitExitMail polls the session's inbox until the completion mail of
// process arrives (a wait that would not take the completion inline).
func awaitExitMail(t testing.TB, s *Supervisor, session, process string) Mail {
	t.Helper()
	var got Mail
	testenv.Eventually(t, 10*time.Second, "the completion mail of "+process, func() bool {
		pg, err := s.Inbox(session, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pg.Mails {
			if m.Kind == MailExit && m.Process == process {
				got = m
				return true
			}
		}
		return false
	})
	return got
}
