package plugins_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolbox-dev/toolbox/plugins"
)

// noisyLines is how many 25-byte lines the "noisy-exit" plugin writes to
// stderr before its last words: more than one read takes, little enough
// for the rest to wait in the pipe while the plugin exits.
const noisyLines = 1600

// laggingWriter holds its first write for delay, as a slow reader of
// Options.Stderr (a terminal under load) would.
type laggingWriter struct {
	once  sync.Once
	delay time.Duration
	mu    sync.Mutex
	b     strings.Builder
}

func (w *laggingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { time.Sleep(w.delay) })
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *laggingWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// noisyEnv makes the fake plugin's "crash" command write much to its
// stderr descriptor (as a runtime panic does, bypassing go-plugin's
// forwarding of os.Stderr) before its last words.
const noisyEnv = "TOOLBOX_PLUGINS_TEST_NOISY"

// noisyCrash writes noisyLines lines and the last words to descriptor 2,
// then exits 3.
func noisyCrash() {
	line := []byte("starting up, please wait\n")
	_, _ = syscall.Write(2, bytes.Repeat(line, noisyLines))
	_, _ = syscall.Write(2, []byte("last words: giving up\n"))
	os.Exit(3)
}

// A plugin that dies mid-run after much output on its stderr descriptor:
// its last words are in the error and every byte reached Options.Stderr,
// even when that reader lags more than a second behind (the tail used to
// be taken after a fixed one-second wait).
func TestLastWordsReachALaggingReader(t *testing.T) {
	w := &laggingWriter{delay: 1500 * time.Millisecond}
	c, err := plugins.Options{Stderr: w}.Start(ctxT(t), self(t), nil, []string{modeEnv + "=good", noisyEnv + "=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAndCheck(t, c)
	_, err = c.RunCommand(ctxT(t), "crash", nil, nil)
	if !errors.Is(err, plugins.ErrPluginExited) || !strings.Contains(err.Error(), "last words: giving up") {
		t.Fatalf("crash: %v; want ErrPluginExited quoting the last words", err)
	}
	if got := w.String(); !strings.Contains(got, strings.Repeat("starting up, please wait\n", noisyLines)+"last words: giving up\n") {
		t.Fatalf("Options.Stderr got %d bytes, not the whole output", len(got))
	}
}
