package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	pb "github.com/toolbox-dev/toolbox/plugins/sdk/proto"
	"github.com/toolbox-dev/toolbox/protocol"
)

// Tool is a toolbox tool served as a plugin.
type Tool interface {
	// Describe returns the describe document: the same document an
	// executable prints for `TOOL describe` (protocol v1 or v2). It is
	// called once, by Serve, and must be constant.
	Describe() protocol.Describe
	// Check is the cheap read-only self-test behind `"check": true`: OK
	// when the tool is usable here, else Detail says why and Fix what to
	// do. Tools that declare no check are never asked.
	Check(ctx context.Context) protocol.CheckResult
	// Run performs one call. args are already validated against the
	// declared args of args.Command. Output goes to out: result bytes
	// with Write, events (process.mode "stream") with Emit. The exit code
	// is the tool's status, 0 for success; a non-nil error with code 0
	// becomes code 1, and its text is the call's error text. ctx ends when
	// the caller cancels or the host stops the plugin.
	Run(ctx context.Context, args Args, out Emitter) (exitCode int, err error)
}

// Service is implemented, beside Tool, by a tool whose process.mode is
// "service". Serve runs for as long as the service lives: in delivers the
// input events the host sends (each one JSON value, or one line for
// "lines" input framing) and is closed when the host closes the input; ctx
// ends when the host stops the service. Output and the result are as for
// Tool.Run.
type Service interface {
	Serve(ctx context.Context, args Args, in <-chan []byte, out Emitter) (exitCode int, err error)
}

// Emitter is where a call's output goes. Its methods are safe for
// concurrent use and fail once the call has returned or the caller is gone.
// Under Serve, Write and Emit return once the output is on the plugin's
// socket to the host: it reaches the host even if the plugin then calls
// os.Exit, crashes or is killed.
type Emitter interface {
	// Write sends p as result bytes (a oneshot tool's stdout, or output
	// framed as "lines" or "chunks"). Each Write is sent at once: buffer
	// small writes.
	io.Writer
	// Emit sends one output event, encoded with encoding/json (pass a
	// json.RawMessage to send JSON you have already encoded; it must be
	// one valid JSON value).
	Emit(event any) error
}

// Args are the argument values of one call.
type Args struct {
	// Command is the entry of the describe document's "commands" being
	// called; "" is the tool itself.
	Command string
	// Values are the decoded argument values by name: a string, a
	// json.Number or a bool. A missing optional argument (or a null) is
	// absent.
	Values map[string]any
}

// Has says whether the argument name was given.
func (a Args) Has(name string) bool {
	_, ok := a.Values[name]
	return ok
}

// String returns the argument as text: a string as it is, a number or a
// boolean as its JSON text (what an exec tool receives), "" when absent.
func (a Args) String(name string) string {
	switch v := a.Values[name].(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	default:
		return fmt.Sprint(v)
	}
}

// Int returns the integer argument name, or def when it is absent. The
// error (for a value that is not a whole number, which validation of an
// "integer" backing type already refuses) names the argument.
func (a Args) Int(name string, def int64) (int64, error) {
	v, ok := a.Values[name]
	if !ok {
		return def, nil
	}
	s := a.String(name)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// 1.2e1 and 12.0 are whole numbers too.
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			return def, fmt.Errorf("argument %q: %v is not an integer", name, v)
		}
		n = int64(f)
	}
	return n, nil
}

// Bool returns the boolean argument name, or def when it is absent; the
// strings "true" and "false" count too.
func (a Args) Bool(name string, def bool) (bool, error) {
	if !a.Has(name) {
		return def, nil
	}
	b, err := strconv.ParseBool(a.String(name))
	if err != nil {
		return def, fmt.Errorf("argument %q: %q is not a boolean", name, a.String(name))
	}
	return b, nil
}

// stderr is the process's real standard error, kept before go-plugin
// replaces os.Stderr with the pipe of its stdio stream.
var stderr = os.Stderr

// Logger returns a logger that writes text records to the plugin's
// standard error, which the host keeps (the tail of it appears in its error
// messages). It never writes to stdout.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, nil))
}

// Serve serves t as a toolbox plugin and returns when the host shuts the
// plugin down. Call it from main, before writing anything to stdout. Run
// by hand (without the host's handshake variables), it explains on stderr
// that the binary is a plugin and exits with status 1.
func Serve(t Tool) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pb.Handshake,
		Plugins:         pb.PluginSet(NewServer(t)),
		// Each message a stream sends is on the socket before Send
		// returns (flush.go): emitted output survives an os.Exit.
		GRPCServer: grpcServer,
		// go-plugin's own messages: errors only, to the real stderr.
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "go-plugin",
			Output: stderr,
			Level:  hclog.Error,
		}),
	})
}
