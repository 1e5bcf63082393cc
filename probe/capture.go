// Package probe runs the probe verbs of a tool (describe, check) and reads
// what they print: bounded in time and in output, the whole process group
// stopped when either bound is hit. The compiler uses it at lock time; the
// servers use Check again at run time to re-probe the backends of
// capabilities (live health). It never writes the lock.
package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// Probe output limits: a describe or check document is small; a tool that
// prints more is broken, and reading it all would let it exhaust memory.
const (
	MaxOutput  = 1 << 20 // bytes of stdout kept from describe/check
	StderrTail = 2048    // bytes of stderr quoted in a failure
	probeGrace = time.Second
)

// Captured is what one probe verb printed and how it ended.
type Captured struct {
	// Stdout is at most MaxOutput bytes of stdout.
	Stdout []byte
	// Stderr is the last StderrTail bytes of stderr, trimmed.
	Stderr string
	// Code is the exit code (128+N when killed by signal N).
	Code int
	// TimedOut: the timeout expired and the group was stopped.
	TimedOut bool
	// Overflow: more than MaxOutput bytes arrived and the group was stopped.
	Overflow bool
}

// Capture runs one probe verb and returns what it printed. The child is
// stopped (its whole process group: SIGTERM, SIGKILL after a second) when
// timeout expires or when it prints more than MaxOutput bytes; Failure
// says so. The error is for a child that could not be started.
func Capture(ctx context.Context, spec *sandbox.Spec, c sandbox.Command, timeout time.Duration) (*Captured, error) {
	out := &limitBuffer{limit: MaxOutput}
	errb := &tailBuffer{limit: StderrTail}
	out.onOverflow = make(chan struct{})
	c.Stdout, c.Stderr = out, errb
	p, err := sandbox.Start(spec, c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := &Captured{}
	select {
	case <-p.Done():
	case <-ctx.Done():
		res.TimedOut = true
		stop(p)
	case <-out.onOverflow:
		res.Overflow = true
		stop(p)
	}
	code, werr := p.Wait()
	if werr != nil && !res.TimedOut && !res.Overflow {
		return nil, werr
	}
	res.Code, res.Stdout, res.Stderr = code, out.buf.Bytes(), strings.TrimSpace(errb.String())
	return res, nil
}

// stop asks the group to end, then kills it after probeGrace.
func stop(p *sandbox.Process) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.Done():
	case <-time.After(probeGrace):
		_ = p.Signal(syscall.SIGKILL)
	}
}

// Failure explains a probe that did not succeed (timed out, printed too
// much, exited non-zero with the last line of stderr), or returns nil.
func (c *Captured) Failure(verb string, timeout time.Duration) error {
	switch {
	case c.TimedOut:
		return fmt.Errorf("%s did not finish within %s", verb, timeout)
	case c.Overflow:
		return fmt.Errorf("%s printed more than %d bytes", verb, MaxOutput)
	case c.Code != 0:
		msg := fmt.Sprintf("%s exited with code %d", verb, c.Code)
		if c.Stderr != "" {
			msg += ": " + lastLine(c.Stderr)
		}
		return errors.New(msg)
	}
	return nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// limitBuffer keeps at most limit bytes and signals once when more arrive.
type limitBuffer struct {
	buf        bytes.Buffer
	limit      int
	onOverflow chan struct{}
	over       bool
}

func (b *limitBuffer) Write(p []byte) (int, error) {
	if b.over {
		return len(p), nil
	}
	if b.buf.Len()+len(p) > b.limit {
		b.over = true
		close(b.onOverflow)
		return len(p), nil
	}
	return b.buf.Write(p)
}

// tailBuffer keeps the last limit bytes written.
type tailBuffer struct {
	buf   []byte
	limit int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.limit {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.limit:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return string(b.buf) }
