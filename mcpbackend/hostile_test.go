package mcpbackend

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/manifest"
)

// rawServer is a hand-written MCP server over a pair of streams: enough of
// the protocol to initialize and list one tool, and hooks to misbehave as
// a hostile server can (stop reading, flood the client).
type rawServer struct {
	in  *bufio.Reader
	out io.Writer
	mu  sync.Mutex // one line at a time on out
	// afterInit runs once the initialized notification arrived; when it
	// returns false the server stops reading its input (for good).
	afterInit func(s *rawServer) bool
	// list, when set, is the result of tools/list for a cursor.
	list func(cursor string) string
	// call, when set, handles tools/call in place of the empty answer.
	call func(s *rawServer, id json.RawMessage)
	// answered, when set, receives the id of each answer the client
	// sends to the server's own requests.
	answered chan string
	// clientWriter, when set, wraps the client's end of the server's
	// stdin (to see a write begin).
	clientWriter func(io.WriteCloser) io.WriteCloser
}

// writeCloser is an io.WriteCloser of a write function and a closer.
type writeCloser struct {
	write func([]byte) (int, error)
	io.Closer
}

func (w writeCloser) Write(p []byte) (int, error) { return w.write(p) }

const rawTools = `{"tools":[{"name":"echo","description":"Echo","inputSchema":{"type":"object"}}]}`

func (s *rawServer) send(line string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := io.WriteString(s.out, line+"\n")
	return err
}

// sendRaw writes text as it is, with no newline (half a message).
func (s *rawServer) sendRaw(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := io.WriteString(s.out, text)
	return err
}

func (s *rawServer) answer(id json.RawMessage, result string) error {
	return s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
}

// serve reads requests until its input ends or afterInit says to stop.
func (s *rawServer) serve() {
	for {
		line, err := s.in.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case "":
			if s.answered != nil {
				s.answered <- string(m.ID)
			}
		case "initialize":
			_ = s.answer(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"raw","version":"1"}}`)
		case "notifications/initialized":
			if s.afterInit != nil && !s.afterInit(s) {
				return
			}
		case "tools/list":
			if s.list != nil {
				_ = s.answer(m.ID, s.list(m.Params.Cursor))
			} else {
				_ = s.answer(m.ID, rawTools)
			}
		case "tools/call":
			if s.call != nil {
				s.call(s, m.ID)
				continue
			}
			_ = s.answer(m.ID, `{"content":[{"type":"text","text":""}]}`)
		default:
			if len(m.ID) > 0 {
				_ = s.answer(m.ID, `{}`)
			}
		}
	}
}

// connectRaw connects a session to srv over two OS pipes (the transport
// Start uses), srv serving on its own goroutine. The pipes are closed when
// the test ends.
func connectRaw(t *testing.T, srv *rawServer, onChange func()) *Session {
	t.Helper()
	c2sR, c2sW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s2cR, s2cW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []*os.File{c2sR, c2sW, s2cR, s2cW} {
			f.Close()
		}
	})
	srv.in, srv.out = bufio.NewReader(c2sR), s2cW
	go srv.serve()
	var w io.WriteCloser = c2sW
	if srv.clientWriter != nil {
		w = srv.clientWriter(c2sW)
	}
	s, err := Connect(context.Background(), "raw", &mcp.IOTransport{Reader: s2cR, Writer: w}, onChange)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// within runs f on its own goroutine and fails the test when it has not
// returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

// A server that stops reading its stdin cannot hold a call past the
// call's context: a request larger than the pipe (an agent's 1 MiB
// argument) blocks the write, and the session gives the connection up
// when the context ends, instead of blocking the call, and then Close,
// for ever. The twin: the same call to a server that reads is answered.
func TestCallReturnsWhenTheServerStopsReading(t *testing.T) {
	big := map[string]any{"text": strings.Repeat("x", 1<<20)}

	t.Run("reading", func(t *testing.T) {
		s := connectRaw(t, &rawServer{}, nil)
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := s.Call(ctx, "echo", big); err != nil {
			t.Fatalf("Call = %v", err)
		}
	})

	t.Run("deaf", func(t *testing.T) {
		// The context ends once the big write has begun (a pipe holds
		// 64 KiB): a context that ended before the write, as a fixed
		// timeout can on a loaded machine, writes nothing and rightly
		// keeps the session.
		began := make(chan struct{})
		var once sync.Once
		srv := &rawServer{
			afterInit: func(*rawServer) bool { return false },
			clientWriter: func(w io.WriteCloser) io.WriteCloser {
				return writeCloser{Closer: w, write: func(p []byte) (int, error) {
					if len(p) > 64<<10 {
						once.Do(func() { close(began) })
					}
					return w.Write(p)
				}}
			},
		}
		s := connectRaw(t, srv, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-began
			cancel()
		}()
		var err error
		within(t, testenv.WaitBound, "a call whose write blocks, once its context ended,", func() {
			_, err = s.Call(ctx, "echo", big)
		})
		if err == nil {
			t.Fatal("Call succeeded")
		}
		select {
		case <-s.Done():
		case <-time.After(testenv.WaitBound):
			t.Fatal("the session is still open after a write that could not complete")
		}
		within(t, testenv.WaitBound, "Close", func() { s.Close() })
	})
}

// The same server as a process: the call returns when its context ends,
// and Close kills the server, which ignores the end of its stdin.
func TestStartedServerThatStopsReadingIsKilled(t *testing.T) {
	l := helper(t)
	l.Command.Env = []string{"MCPBACKEND_HELPER=deaf"}
	s, err := Start(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	within(t, testenv.WaitBound, "a call to a server that stopped reading", func() {
		_, err = s.Call(ctx, "echo", map[string]any{"text": strings.Repeat("x", 1<<20)})
	})
	if err == nil {
		t.Fatal("Call succeeded")
	}
	within(t, testenv.WaitBound, "Close", func() { s.Close() })
	select {
	case <-s.proc.Done():
	default:
		t.Fatal("the server still runs after Close")
	}
}

// deafMain is the test binary as a server that initializes, then never
// reads its stdin again, and lives on when it ends.
func deafMain() {
	srv := &rawServer{in: bufio.NewReader(os.Stdin), out: os.Stdout, afterInit: func(*rawServer) bool { return false }}
	srv.serve()
	time.Sleep(time.Hour)
}

// Requests and notifications a server sends the client cost the client
// nothing that grows with them: the client offers nothing (no roots,
// sampling or elicitation) and answers each request itself, in order, so
// a server that floods requests and never reads the answers only stops
// itself (its writes block); a flood of tools/list_changed runs at most
// one check at a time. Before, every request got a goroutine blocked on
// its answer and every notification one waiting for the listing lock.
func TestServerRequestsAndNotificationsAreBounded(t *testing.T) {
	const flood = 20000
	base := runtime.NumGoroutine()

	t.Run("requests", func(t *testing.T) {
		blocked := make(chan struct{})
		srv := &rawServer{afterInit: func(s *rawServer) bool {
			go func() {
				// A write that cannot complete in a second means the
				// client stopped reading: back-pressure, as wanted.
				f := s.out.(*os.File)
				for i := 0; i < flood; i++ {
					method := []string{"ping", "roots/list", "sampling/createMessage", "elicitation/create"}[i%4]
					_ = f.SetWriteDeadline(time.Now().Add(time.Second))
					if err := s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"s%d","method":%q,"params":{}}`, i, method)); err != nil {
						close(blocked)
						return
					}
				}
				close(blocked)
			}()
			return false // and never reads an answer
		}}
		s := connectRaw(t, srv, nil)
		defer s.Close()
		<-blocked
		if n := runtime.NumGoroutine() - base; n > 200 {
			t.Fatalf("%d more goroutines after %d requests of a server that reads no answer", n, flood)
		}
	})

	t.Run("answers", func(t *testing.T) {
		// The twin: a server that reads gets an answer to each request:
		// ping's empty result, an error for what the client does not offer.
		c2sR, c2sW, _ := os.Pipe()
		s2cR, s2cW, _ := os.Pipe()
		defer func() {
			for _, f := range []*os.File{c2sR, c2sW, s2cR, s2cW} {
				f.Close()
			}
		}()
		answers := make(chan string, 8)
		go func() {
			in := bufio.NewReader(c2sR)
			send := func(line string) { _, _ = io.WriteString(s2cW, line+"\n") }
			for {
				line, err := in.ReadBytes('\n')
				if err != nil {
					return
				}
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Result json.RawMessage `json:"result"`
					Error  *struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				_ = json.Unmarshal(line, &m)
				switch {
				case m.Method == "initialize":
					send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"raw","version":"1"}}}`, m.ID))
				case m.Method == "notifications/initialized":
					send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
					send(`{"jsonrpc":"2.0","id":"r","method":"roots/list"}`)
					send(`{"jsonrpc":"2.0","id":"c","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`)
				case m.Method == "" && m.Error != nil:
					answers <- fmt.Sprintf("%s error %d", m.ID, m.Error.Code)
				case m.Method == "":
					answers <- fmt.Sprintf("%s %s", m.ID, m.Result)
				}
			}
		}()
		s, err := Connect(context.Background(), "raw", &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var got []string
		for len(got) < 3 {
			select {
			case a := <-answers:
				got = append(got, a)
			case <-time.After(testenv.WaitBound):
				t.Fatalf("answers %q, then nothing", got)
			}
		}
		want := []string{`"p" {}`, `"r" error -32601`, `"c" error -32601`}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("answers %q, want %q", got, want)
		}
	})

	t.Run("list_changed", func(t *testing.T) {
		var mu sync.Mutex
		running, most := 0, 0
		release := make(chan struct{})
		srv := &rawServer{answered: make(chan string, 1), afterInit: func(s *rawServer) bool {
			go func() {
				for i := 0; i < flood; i++ {
					_ = s.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
				}
				// The end of the flood: a ping, answered once the client
				// has read every notification before it.
				_ = s.send(`{"jsonrpc":"2.0","id":"end","method":"ping"}`)
			}()
			return true
		}}
		s := connectRaw(t, srv, func() {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			<-release // a slow check: the flood goes on meanwhile
			mu.Lock()
			running--
			mu.Unlock()
		})
		defer s.Close()
		defer close(release)
		select {
		case id := <-srv.answered:
			if id != `"end"` {
				t.Fatalf("answer to %s", id)
			}
		case <-time.After(testenv.WaitBound):
			t.Fatal("no answer to the ping that ends the flood")
		}
		if n := runtime.NumGoroutine() - base; n > 200 {
			t.Errorf("%d more goroutines during a flood of %d tools/list_changed", n, flood)
		}
		testenv.WaitFor(t, "a first check", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return most > 0
		})
		mu.Lock()
		defer mu.Unlock()
		if most != 1 {
			t.Errorf("%d checks ran at once, want 1", most)
		}
	})
}

// A listing is bounded as a whole, not only per page (a frame is at most
// 16 MiB, and a listing could have 100 pages: 1.6 GB held at every call's
// verification): past MaxListBytes the listing fails, naming the bound.
// The twin: the same pages within the bound are listed.
func TestListIsBounded(t *testing.T) {
	page := func(pages int) func(string) string {
		desc := strings.Repeat("d", 1<<20)
		return func(cursor string) string {
			n := 0
			fmt.Sscan(cursor, &n)
			next := ""
			if n+1 < pages {
				next = fmt.Sprint(n + 1)
			}
			return fmt.Sprintf(`{"tools":[{"name":"t%d","description":%q,"inputSchema":{"type":"object"}}],"nextCursor":%q}`, n, desc, next)
		}
	}
	ctx := context.Background()
	s := connectRaw(t, &rawServer{list: page(4)}, nil)
	defer s.Close()
	if defs, err := s.List(ctx); err != nil || len(defs) != 4 {
		t.Fatalf("List of 4 MiB = %d tools, %v", len(defs), err)
	}

	// The bound lowered to 5 MiB, for speed: 8 pages of 1 MiB.
	defer func(b int) { listBudget = b }(listBudget)
	listBudget = 5 << 20
	const pages = 8
	big := connectRaw(t, &rawServer{list: page(pages)}, nil)
	defer big.Close()
	defs, err := big.List(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", listBudget)) {
		t.Fatalf("List of %d MiB = %d tools, %v", pages, len(defs), err)
	}
}

// A server reached by URL that answers with a JSON body without end (or
// of gigabytes) is read up to a frame's bound (mcp.DefaultMaxLineLength),
// as a stdio server's line is, not into memory whole: the SDK reads such a
// body with io.ReadAll. The twin: the same server answering a normal
// body initializes.
func TestRemoteBodyIsBounded(t *testing.T) {
	const flood = 256 << 20
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		if m.Method != "initialize" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if r.URL.Query().Get("flood") == "" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"remote","version":"1"}}}`, m.ID)
			return
		}
		// Spaces before a valid answer: JSON that never ends in time.
		chunk := []byte(strings.Repeat(" ", 1<<20))
		for written.Load() < flood {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	s, err := Dial(ctx, Remote{Server: "remote", URL: srv.URL + "/mcp", StartTimeout: time.Minute})
	if err != nil {
		t.Fatalf("the twin: %v", err)
	}
	s.Close()
	s, err = Dial(ctx, Remote{Server: "remote", URL: srv.URL + "/mcp?flood=1", StartTimeout: time.Minute})
	if err == nil {
		s.Close()
		t.Fatal("a body of 256 MiB initialized")
	}
	if got := written.Load(); got >= flood {
		t.Errorf("the client read the whole %d-byte body (%v)", got, err)
	}
}

// A drift report is bounded whatever the listing: a server that lists a
// hundred thousand tools (a few MiB) gets at most MaxDriftLines lines,
// the last counting the rest, not an error larger than its listing
// returned to the model and logged at every call. The twin: a few
// differences are each listed (TestVerify).
func TestDriftIsBounded(t *testing.T) {
	p := &Pin{Server: "big", Tools: map[string]Pinned{}}
	var live []Definition
	const n = 100000
	for i := range n {
		live = append(live, Definition{Name: fmt.Sprintf("t%06d", i), SHA256: "x"})
	}
	lines := p.Diff(manifest.MCPImplementation{}, live)
	if len(lines) != MaxDriftLines {
		t.Fatalf("%d lines for %d added tools", len(lines), n)
	}
	if last := lines[len(lines)-1]; last != fmt.Sprintf("and %d more differences", n-MaxDriftLines+1) {
		t.Errorf("last line %q", last)
	}
}
