package plugins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/plugins/sdk"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// modeEnv switches the test binary into one of the fake plugins below: the
// tests start os.Args[0] itself as the plugin (go-plugin's own tests do the
// same with helper processes).
const modeEnv = "TOOLBOX_PLUGINS_TEST_MODE"

func TestMain(m *testing.M) {
	sandbox.Init() // the landlock helper re-executes this binary
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(fakePlugin(mode))
	}
	code := testenv.RunWithTmp(m)
	plugin.CleanupClients()
	removeExamples()
	os.Exit(code)
}

// fakePlugin runs the plugin named mode and returns its exit code.
func fakePlugin(mode string) int {
	switch mode {
	case "good":
		sdk.Serve(fakeTool{})
	case "stdout-first":
		fmt.Println("starting up")
		sdk.Serve(fakeTool{})
	case "junk":
		fmt.Println("usage: frobnicate FILE")
		return 0
	case "junk-hang":
		fmt.Println("interactive mode> ")
		time.Sleep(time.Hour)
	case "hang":
		time.Sleep(time.Hour)
	case "exit":
		fmt.Fprintln(os.Stderr, "cannot open config: no such file")
		return 3

	case "other-cookie":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "OTHER_APP_PLUGIN", MagicCookieValue: "x"},
			Plugins:         plugins.PluginSet(sdk.NewServer(fakeTool{})),
			GRPCServer:      plugin.DefaultGRPCServer,
		})
	case "version2":
		hs := plugins.Handshake
		hs.ProtocolVersion = 2
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: hs,
			Plugins:         plugins.PluginSet(sdk.NewServer(fakeTool{})),
			GRPCServer:      plugin.DefaultGRPCServer,
		})
	case "netrpc":
		// What a net/rpc go-plugin prints; nothing listens there.
		fmt.Printf("%d|%d|unix|/nonexistent/plugin.sock|netrpc\n", plugin.CoreProtocolVersion, plugins.ProtocolVersion)
		time.Sleep(time.Hour)
	case "foreign-address":
		// A hostile plugin names an address of its choosing, which the host
		// would dial from outside the sandbox.
		fmt.Printf("%d|%d|%s|grpc\n", plugin.CoreProtocolVersion, plugins.ProtocolVersion, os.Getenv("TOOLBOX_PLUGINS_TEST_ADDR"))
		time.Sleep(time.Hour)
	case "link-address":
		// A hostile plugin names a socket in its own directory, as it
		// must, but puts a link there to a socket of the host.
		at := filepath.Join(os.Getenv("PLUGIN_UNIX_SOCKET_DIR"), "plugin-link")
		if err := os.Symlink(os.Getenv("TOOLBOX_PLUGINS_TEST_ADDR"), at); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%d|%d|unix|%s|grpc\n", plugin.CoreProtocolVersion, plugins.ProtocolVersion, at)
		time.Sleep(time.Hour)
	case "bad-describe":
		sdk.Serve(badDescribe{})
	default:
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", modeEnv, mode)
		return 2
	}
	return 0
}

// emitExitBytes is how many result bytes emit-exit writes before its event.
const emitExitBytes = 100 << 10

// fakeTool is a tool with one command per behaviour under test.
type fakeTool struct{}

var (
	_ sdk.Tool    = fakeTool{}
	_ sdk.Service = fakeTool{}
)

func (fakeTool) Describe() protocol.Describe {
	text := protocol.Arg{Name: "text", Description: "text to echo", Type: "string", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional}
	noArgs := []protocol.Arg{}
	return protocol.Describe{
		Protocol:    2,
		Slug:        "fake",
		Description: "a plugin for tests",
		Args:        []protocol.Arg{text},
		Check:       true,
		Commands: []protocol.Command{
			{Name: "stream", Description: "emit n events", Args: []protocol.Arg{{Name: "n", Description: "how many", Type: "integer", BackingType: "integer", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashEqual}}},
			{Name: "fail", Description: "exit 4 with an error", Args: noArgs},
			{Name: "panic", Description: "panic in Run", Args: noArgs},
			{Name: "gopanic", Description: "panic in a goroutine: the process dies", Args: noArgs},
			{Name: "crash", Description: "exit 3 in the middle of a stream", Args: noArgs},
			{Name: "emit-exit", Description: "write, emit and exit 3 at once, with no pause", Args: noArgs},
			{Name: "spawn", Description: "start a grandchild and report its pid", Args: noArgs},
			{Name: "block", Description: "block until cancelled", Args: noArgs},
			{Name: "env", Description: "print the environment", Args: noArgs},
		},
	}
}

func (fakeTool) Check(context.Context) protocol.CheckResult {
	return protocol.CheckResult{OK: false, Detail: "frob not found", Fix: "install frob"}
}

func (fakeTool) Run(ctx context.Context, args sdk.Args, out sdk.Emitter) (int, error) {
	switch args.Command {
	case "":
		_, err := out.Write([]byte(args.String("text")))
		return 0, err
	case "stream":
		n, err := args.Int("n", 3)
		if err != nil {
			return 2, err
		}
		for i := range n {
			if err := out.Emit(map[string]int64{"i": i}); err != nil {
				return 1, err
			}
		}
		return 0, nil
	case "fail":
		return 4, fmt.Errorf("frob failed")
	case "panic":
		panic("boom")
	case "gopanic":
		done := make(chan struct{})
		go func() { panic("boom in a goroutine") }()
		<-done
	case "crash":
		_ = out.Emit(map[string]int{"i": 0})
		_ = out.Emit(map[string]int{"i": 1})
		time.Sleep(50 * time.Millisecond) // let the events leave
		if os.Getenv(noisyEnv) != "" {
			noisyCrash()
		}
		sdk.Logger().Error("giving up")
		os.Exit(3)
	case "emit-exit":
		// What an agent's plugin does when it is done: its last words,
		// then os.Exit, with nothing in between.
		_, _ = out.Write(bytes.Repeat([]byte("x"), emitExitBytes))
		_ = out.Emit(map[string]string{"last": "words"})
		os.Exit(3)
	case "spawn":
		exe, err := os.Executable()
		if err != nil {
			return 1, err
		}
		// The grandchild holds the plugin's real stdout and stderr open:
		// stopping the plugin must not wait for them to close.
		cmd := exec.Command(exe)
		cmd.Env = []string{modeEnv + "=hang"}
		cmd.Stdout = os.NewFile(1, "stdout")
		cmd.Stderr = os.NewFile(2, "stderr")
		if err := cmd.Start(); err != nil {
			return 1, err
		}
		_, err = out.Write([]byte(strconv.Itoa(cmd.Process.Pid)))
		return 0, err
	case "block":
		<-ctx.Done()
		return 1, ctx.Err()
	case "env":
		data, _ := json.Marshal(os.Environ())
		_, err := out.Write(data)
		return 0, err
	}
	return 2, fmt.Errorf("unknown command %q", args.Command)
}

// Serve echoes each input event back as an output event, then exits 0 when
// the input is closed.
func (fakeTool) Serve(ctx context.Context, args sdk.Args, in <-chan []byte, out sdk.Emitter) (int, error) {
	if err := out.Emit(map[string]string{"ready": args.String("text")}); err != nil {
		return 1, err
	}
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				return 0, nil
			}
			if err := out.Emit(json.RawMessage(ev)); err != nil {
				return 1, err
			}
		case <-ctx.Done():
			return 1, ctx.Err()
		}
	}
}

// badDescribe declares an arg with an unknown mode and no arity.
type badDescribe struct{ fakeTool }

func (badDescribe) Describe() protocol.Describe {
	return protocol.Describe{
		Slug:        "bad",
		Description: "an invalid describe document",
		Args:        []protocol.Arg{{Name: "x", Description: "x", Type: "string", BackingType: "string", Mode: "flag"}},
	}
}
