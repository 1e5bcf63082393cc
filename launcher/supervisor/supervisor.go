package supervisor

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
)

// Defaults of Config (DESIGN.md §5 where it names them).
const (
	DefaultLivePerSession     = 8
	DefaultLivePerHost        = 32
	DefaultFinishedPerSession = 100
	DefaultFinishedPerHost    = 1000
	DefaultRestartLimit       = 5
	DefaultMailboxMails       = 1000
	DefaultMailboxBytes       = 4 << 20
	DefaultMailEvents         = 100
	DefaultMailBytes          = 64 << 10

	DefaultStartTimeout      = 10 * time.Second
	DefaultStopGrace         = 5 * time.Second
	DefaultSendQuiet         = 300 * time.Millisecond
	DefaultSendMax           = 2 * time.Second
	DefaultRoundGap          = 500 * time.Millisecond
	DefaultRoundMax          = 10 * time.Second
	DefaultRestartBackoff    = time.Second
	DefaultRestartMaxBackoff = 30 * time.Second
	DefaultRestartReset      = time.Minute
	DefaultStdinWrite        = 2 * time.Second

	// DefaultWait is a background command's inline wait when Command.Wait is 0.
	DefaultWait = 3 * time.Second
	// MaxWait caps every inline wait (RunCommand, Status).
	MaxWait = 30 * time.Second
	// TailBytes bounds Status.Stdout and Status.Stderr (each) and the
	// events of Status.Events.
	TailBytes = 4 << 10
	// MaxInbox is the most mails one Inbox call returns.
	MaxInbox = 100
)

// Config configures a Supervisor. Zero fields take the defaults above.
type Config struct {
	// StateDir holds process records (processes/<id>.json) and, when
	// LogBytes > 0, log files (logs/<id>.stdout.log, .stderr.log). It is
	// created (mode 0700) when missing. "" keeps nothing on disk: no
	// records, no logs, no lost detection.
	StateDir string
	// SlotsDir holds the host-wide count of live processes (slots.go),
	// shared by every supervisor that names the same directory; "" means
	// DefaultSlotsDir(StateDir), and without a state dir only this
	// supervisor's own processes are counted. `toolbox mcp` keeps its
	// records in <state dir>/mcp and passes <state dir>/slots, the
	// daemon's, so both count against one limit.
	SlotsDir string
	// Hidden are directories no started tool may reach besides StateDir
	// (the state directory holding StateDir, when StateDir is a
	// subdirectory of it): see runspec.NewTrust.
	Hidden []string
	// Lock and LockPath are the lock Start runs tools from (SetLock
	// replaces them). Lock nil refuses every Start, and RunCommand too
	// (builtin "process" must be declared in the lock).
	Lock     *manifest.Lock
	LockPath string
	// CallerEnv is the default caller environment (StartOptions.CallerEnv
	// and Command.CallerEnv override it per call).
	CallerEnv []string
	// Workspace is the default workspace of the processes it starts
	// (StartOptions.Workspace and Command.Workspace override it per call):
	// the server's --workspace or $TOOLBOX_WORKSPACE; the zero value takes
	// the toolbox file's default, else the supervisor's directory. It is
	// resolved at each start (runspec.Trust.WithWorkspace).
	Workspace runspec.Workspace
	// CompileSchema compiles a declared event schema (output.event,
	// input.event); the daemon passes validate.CompileEventSchema. It is
	// injected so this package links no JSON Schema library. With nil, a
	// tool that declares an event schema is refused at Start
	// (launcher.ErrNeedsValidator); events of tools that declare none are
	// checked for JSON syntax only.
	CompileSchema func(schema json.RawMessage) (EventValidator, error)
	Limits        Limits
	Timing        Timing
	// RingBytes is the output ring per process (DefaultRingBytes).
	RingBytes int
	// LogBytes > 0 writes each process's full output to log files under
	// StateDir, each file capped at LogBytes. 0 writes none.
	LogBytes int64
	// Shell runs background commands as `Shell -c CMD`; "" means bash
	// from PATH, else /bin/sh.
	Shell string
	// Logf receives problems that fail nothing (a record that could not be
	// written or read). nil discards them. It is never given to stdout.
	Logf func(format string, args ...any)
}

// Limits bound what a Supervisor keeps (DESIGN.md §5 for the first three).
type Limits struct {
	// LivePerSession and LivePerHost bound the processes not finished;
	// a start over either is refused with a *LimitError.
	LivePerSession int
	LivePerHost    int
	// FinishedPerSession is how many finished records a session keeps;
	// the oldest finished one is dropped (with its record file and logs).
	FinishedPerSession int
	// FinishedPerHost is how many finished records the supervisor keeps
	// over all its sessions: past it the oldest finished one (by its end)
	// is dropped whatever its session, and a session left with no
	// process is forgotten, mailbox included. Sessions opened and
	// abandoned (an agent per task) then cost nothing for ever.
	FinishedPerHost int
	// RestartLimit is how many restarts on_exit "restart" allows (a run
	// that lasted Timing.RestartReset resets the count).
	RestartLimit int
	// MailboxMails and MailboxBytes bound a session's mailbox; the oldest
	// mails are dropped first.
	MailboxMails int
	MailboxBytes int
	// MailEvents and MailBytes bound the events one mail carries; the rest
	// of a digest is counted in Mail.Elided.
	MailEvents int
	MailBytes  int
}

// Timing holds the supervisor's durations.
type Timing struct {
	// StartTimeout bounds a start that waits for ready when the tool does
	// not declare runtime.timeout.start.
	StartTimeout time.Duration
	// StopGrace is the time between the cancel and SIGKILL when the tool
	// does not declare runtime.timeout.stop (background commands always).
	StopGrace time.Duration
	// SendQuiet and SendMax bound Send's answer window: it ends SendQuiet
	// after the last event (or after the write when none comes), at most
	// SendMax after the write.
	SendQuiet time.Duration
	SendMax   time.Duration
	// RoundGap ends a digest "round" (a quiet gap); RoundMax cuts a round
	// that never pauses, and bounds how long a partial "events" n group
	// waits (it is mailed RoundMax after its first event).
	RoundGap time.Duration
	RoundMax time.Duration
	// RestartBackoff is the first restart's delay, doubled at each
	// restart up to RestartMaxBackoff; RestartReset is the run time after
	// which the restart count starts over.
	RestartBackoff    time.Duration
	RestartMaxBackoff time.Duration
	RestartReset      time.Duration
	// StdinWrite bounds one write to a process's stdin (a process that
	// does not read its stdin fails the send instead of hanging it).
	StdinWrite time.Duration
}

func (c *Config) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	l, t := &c.Limits, &c.Timing
	def(&l.LivePerSession, DefaultLivePerSession)
	def(&l.LivePerHost, DefaultLivePerHost)
	def(&l.FinishedPerSession, DefaultFinishedPerSession)
	def(&l.FinishedPerHost, DefaultFinishedPerHost)
	def(&l.RestartLimit, DefaultRestartLimit)
	def(&l.MailboxMails, DefaultMailboxMails)
	def(&l.MailboxBytes, DefaultMailboxBytes)
	def(&l.MailEvents, DefaultMailEvents)
	def(&l.MailBytes, DefaultMailBytes)
	defDur(&t.StartTimeout, DefaultStartTimeout)
	defDur(&t.StopGrace, DefaultStopGrace)
	defDur(&t.SendQuiet, DefaultSendQuiet)
	defDur(&t.SendMax, DefaultSendMax)
	defDur(&t.RoundGap, DefaultRoundGap)
	defDur(&t.RoundMax, DefaultRoundMax)
	defDur(&t.RestartBackoff, DefaultRestartBackoff)
	defDur(&t.RestartMaxBackoff, DefaultRestartMaxBackoff)
	defDur(&t.RestartReset, DefaultRestartReset)
	defDur(&t.StdinWrite, DefaultStdinWrite)
	if c.RingBytes <= 0 {
		c.RingBytes = DefaultRingBytes
	}
}

// Supervisor owns processes per session (DESIGN.md §5). All methods are
// safe for concurrent use. Processes outlive the calls that start them;
// Close stops them all.
type Supervisor struct {
	cfg   Config
	owner Owner
	shell string
	self  identity // the supervisor's user (Runtime)

	mu       sync.Mutex
	lock     *manifest.Lock
	lockPath string
	procs    map[string]*proc
	sessions map[string]*session
	live     int
	slots    *hostSlots // nil: no slots directory
	closed   bool
}

// session is what a session owns: processes in start order and a mailbox.
type session struct {
	id    string
	procs []*proc
	live  int
	mail  *mailbox
}

// DefaultShell is the shell of background commands when Config.Shell is
// "": bash found on PATH, else /bin/sh.
func DefaultShell() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// New returns a Supervisor. With a StateDir it creates the directory and
// reads the records there: a record whose supervisor is dead (its pid is
// gone or now belongs to a process started at another time) and whose
// process had not finished is marked lost, loaded as a finished record of
// its session, and mailed to that session; the process is not restarted,
// nor signalled until Stop or CloseSession asks (see Stop). Records of a supervisor that is still alive are left
// alone. Errors: the state dir cannot be created.
func New(cfg Config) (*Supervisor, error) {
	cfg.defaults()
	s := &Supervisor{
		cfg:      cfg,
		lock:     cfg.Lock,
		lockPath: cfg.LockPath,
		procs:    map[string]*proc{},
		sessions: map[string]*session{},
		shell:    cfg.Shell,
		self:     selfIdentity(),
	}
	if s.shell == "" {
		s.shell = DefaultShell()
	}
	var inst [8]byte
	_, _ = rand.Read(inst[:])
	s.owner = Owner{Instance: hex.EncodeToString(inst[:]), PID: os.Getpid()}
	if st, _, err := procStartTime(s.owner.PID); err == nil {
		s.owner.StartTime = st
	}
	if cfg.StateDir != "" {
		for _, d := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, recordsDir), filepath.Join(cfg.StateDir, logsDir)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("creating state dir: %w", err)
			}
		}
		s.recover()
	}
	if dir := cmp.Or(cfg.SlotsDir, DefaultSlotsDir(cfg.StateDir)); dir != "" {
		slots, err := openHostSlots(dir, cfg.Limits.LivePerHost)
		if err != nil {
			return nil, err
		}
		s.slots = slots
	}
	return s, nil
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// recover loads the records of dead supervisors, marking unfinished
// processes lost.
func (s *Supervisor) recover() {
	removeStaleTemps(s.cfg.StateDir)
	recs, err := ReadRecords(s.cfg.StateDir)
	if err != nil {
		s.logf("%v", err)
	}
	now := time.Now()
	for _, r := range recs {
		if r.Owner.Instance == s.owner.Instance || r.Owner.Alive() {
			continue
		}
		lost := !r.State.Final()
		if lost {
			r.State, r.Since, r.Ended = StateLost, now, &now
			r.Reason = lostReason(r)
			if err := writeRecord(s.cfg.StateDir, r); err != nil {
				s.logf("%v", err)
			}
		}
		p := loadedProc(s, r)
		sess := s.session(r.Session)
		p.mail = sess.mail
		s.procs[p.id] = p
		sess.procs = append(sess.procs, p)
		s.trim(sess)
		if lost {
			sess.mail.add(p.exitMail())
		}
	}
}

// SetLock replaces the lock later Starts use; running processes keep
// theirs.
func (s *Supervisor) SetLock(lockPath string, l *manifest.Lock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lock, s.lockPath = l, lockPath
}

// session returns the session, creating it. s.mu is held (or s is not
// shared yet).
func (s *Supervisor) session(id string) *session {
	sess := s.sessions[id]
	if sess == nil {
		sess = &session{id: id, mail: newMailbox(s.cfg.Limits.MailboxMails, s.cfg.Limits.MailboxBytes)}
		s.sessions[id] = sess
	}
	return sess
}

// checkSession refuses ids that cannot be shown or stored safely.
func checkSession(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("session %q: %w (want 1 to 128 bytes)", id, ErrBadSession)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("session %q: %w (control characters)", id, ErrBadSession)
		}
	}
	return nil
}

// reservation is a process about to be launched.
type reservation struct {
	kind                 Kind
	tool, capability     string
	name, label, command string
	plan                 *launchPlan
}

// reserve counts a new process against the limits and registers it
// (state starting, nothing launched yet).
func (s *Supervisor) reserve(sessionID string, r reservation) (*proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	sess := s.session(sessionID)
	if sess.live >= s.cfg.Limits.LivePerSession {
		return nil, &LimitError{Limit: "live processes per session", Max: s.cfg.Limits.LivePerSession}
	}
	hostFull := &LimitError{Limit: "live processes per host", Max: s.cfg.Limits.LivePerHost}
	if s.live >= s.cfg.Limits.LivePerHost {
		return nil, hostFull
	}
	if r.name != "" {
		for _, q := range sess.procs {
			if q.name == r.name && !q.final() {
				return nil, fmt.Errorf("name %q: %w by process %s (%s); stop it or wait for it to finish", r.name, ErrNameInUse, q.id, q.currentState())
			}
		}
	}
	slot := -1
	if s.slots != nil {
		// Shared with the other supervisors of the slots directory.
		if slot = s.slots.acquire(); slot < 0 {
			return nil, hostFull
		}
	}
	id := s.newID()
	p := newProc(s, id, sessionID, r)
	p.slot = slot
	p.mail = sess.mail
	s.procs[id] = p
	sess.procs = append(sess.procs, p)
	sess.live++
	s.live++
	return p, nil
}

// isClosed says Close was called.
func (s *Supervisor) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// release undoes reserve for a process that never launched.
func (s *Supervisor) release(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.procs, p.id)
	if sess := s.sessions[p.session]; sess != nil {
		sess.procs = slices.DeleteFunc(sess.procs, func(q *proc) bool { return q == p })
		sess.live--
	}
	s.live--
	s.releaseSlot(p)
	p.drop()
	if p.logs != nil {
		p.logs.close()
	}
	p.mu.Lock()
	p.state, p.reason = StateFailed, "never launched"
	p.mu.Unlock()
	close(p.done) // a Close or CloseSession waiting for it goes on
}

// finished is called once when p reaches its final state.
func (s *Supervisor) finished(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live--
	s.releaseSlot(p)
	if sess := s.sessions[p.session]; sess != nil {
		sess.live--
		s.trim(sess)
	}
}

// releaseSlot gives p's host slot back. s.mu is held.
func (s *Supervisor) releaseSlot(p *proc) {
	if s.slots != nil {
		s.slots.release(p.slot)
	}
	p.slot = -1
}

// trim drops the oldest finished records beyond FinishedPerSession. s.mu
// is held.
func (s *Supervisor) trim(sess *session) {
	n := 0
	for _, q := range sess.procs {
		if q.final() {
			n++
		}
	}
	for i := 0; n > s.cfg.Limits.FinishedPerSession && i < len(sess.procs); {
		q := sess.procs[i]
		if !q.final() {
			i++
			continue
		}
		sess.procs = slices.Delete(sess.procs, i, i+1)
		delete(s.procs, q.id)
		q.drop()
		n--
	}
	s.trimHost()
}

// trimHost drops the oldest finished processes of any session while more
// than Limits.FinishedPerHost are kept, and forgets a session left with
// no process. s.mu is held.
func (s *Supervisor) trimHost() {
	finished := 0
	for _, q := range s.procs {
		if q.final() {
			finished++
		}
	}
	for ; finished > s.cfg.Limits.FinishedPerHost; finished-- {
		var oldest *proc
		var oldestEnd time.Time
		for _, q := range s.procs {
			if end, ok := q.endedAt(); ok && (oldest == nil || end.Before(oldestEnd)) {
				oldest, oldestEnd = q, end
			}
		}
		if oldest == nil {
			return
		}
		delete(s.procs, oldest.id)
		oldest.drop()
		if sess := s.sessions[oldest.session]; sess != nil {
			sess.procs = slices.DeleteFunc(sess.procs, func(q *proc) bool { return q == oldest })
			if len(sess.procs) == 0 && sess.live == 0 {
				delete(s.sessions, sess.id)
			}
		}
	}
}

// newID returns "p" and six hex digits, unused in memory and on disk.
// s.mu is held.
func (s *Supervisor) newID() string {
	for {
		var b [3]byte
		_, _ = rand.Read(b[:])
		id := "p" + hex.EncodeToString(b[:])
		if _, taken := s.procs[id]; taken {
			continue
		}
		if s.cfg.StateDir != "" && recordExists(s.cfg.StateDir, id) {
			continue
		}
		return id
	}
}

// lookup finds a process of the session by id, else by name (the newest
// process of that name).
func (s *Supervisor) lookup(sessionID, ref string) (*proc, error) {
	if err := checkSession(sessionID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[ref]; p != nil && p.session == sessionID {
		return p, nil
	}
	if sess := s.sessions[sessionID]; sess != nil && ref != "" {
		for i := len(sess.procs) - 1; i >= 0; i-- {
			if sess.procs[i].name == ref {
				return sess.procs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("process %q in session %q: %w", ref, sessionID, ErrUnknownProcess)
}

// commandsEnabled says the lock declares builtin "process".
func (s *Supervisor) commandsEnabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lock != nil && slices.Contains(s.lock.Builtins, CommandTool) && s.lock.Process != nil
}

func (s *Supervisor) lockSnapshot() (*manifest.Lock, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lock, s.lockPath
}
