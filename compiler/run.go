package compiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"toolbox/sandbox"
)

// Probe output limits: a describe or check document is small; a tool that
// prints more is broken, and reading it all would let it exhaust memory.
const (
	maxProbeOutput = 1 << 20 // bytes of stdout kept from describe/check
	stderrTail     = 2048    // bytes of stderr quoted in a failure
	probeGrace     = time.Second
)

// capture runs one probe verb and returns its stdout. The child is killed
// (its whole process group) when timeout expires or when it prints more
// than maxProbeOutput bytes; both are errors saying so.
type captured struct {
	stdout   []byte
	stderr   string
	code     int
	timedOut bool
	overflow bool
}

func capture(ctx context.Context, spec *sandbox.Spec, c sandbox.Command, timeout time.Duration) (*captured, error) {
	out := &limitBuffer{limit: maxProbeOutput}
	errb := &tailBuffer{limit: stderrTail}
	out.onOverflow = make(chan struct{})
	c.Stdout, c.Stderr = out, errb
	p, err := sandbox.Start(spec, c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := &captured{}
	select {
	case <-p.Done():
	case <-ctx.Done():
		res.timedOut = true
		stop(p)
	case <-out.onOverflow:
		res.overflow = true
		stop(p)
	}
	code, werr := p.Wait()
	if werr != nil && !res.timedOut && !res.overflow {
		return nil, werr
	}
	res.code, res.stdout, res.stderr = code, out.buf.Bytes(), strings.TrimSpace(errb.String())
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

// failure explains a probe that did not succeed, for messages.
func (c *captured) failure(verb string, timeout time.Duration) error {
	switch {
	case c.timedOut:
		return fmt.Errorf("%s did not finish within %s", verb, timeout)
	case c.overflow:
		return fmt.Errorf("%s printed more than %d bytes", verb, maxProbeOutput)
	case c.code != 0:
		msg := fmt.Sprintf("%s exited with code %d", verb, c.code)
		if c.stderr != "" {
			msg += ": " + lastLine(c.stderr)
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
