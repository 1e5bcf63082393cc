package sdk

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"
)

// frame is one HTTP/2 frame header plus payload.
func frame(typ, flags byte, stream uint32, payload []byte) []byte {
	b := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[5:], stream)
	return append(b, payload...)
}

// message is one gRPC message: its 5-byte length prefix and body.
func message(body string) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(body)))
	return append(b, body...)
}

type discard struct{ net.Conn }

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// A message counts as written only once its last byte is, per stream,
// however the frames interleave and the writes split them.
func TestFlushConnCountsMessagesPerStream(t *testing.T) {
	c := &flushConn{Conn: discard{}, streams: map[uint32]*streamCount{}, changed: make(chan struct{})}
	one := message("first message of stream one")
	var wire []byte
	wire = append(wire, frame(0x4, 0, 0, make([]byte, 6))...)        // SETTINGS
	wire = append(wire, frame(0x1, 0x4, 1, []byte("hdrs"))...)       // HEADERS
	wire = append(wire, frame(frameData, 0, 1, one[:10])...)         // stream 1, part
	wire = append(wire, frame(frameData, 0, 3, message("three"))...) // stream 3, whole
	cut := len(wire) + 9 + len(one) - 10 - 1                         // all but the last byte of stream 1's message
	wire = append(wire, frame(frameData, 0, 1, one[10:])...)
	for i := range cut {
		_, _ = c.Write(wire[i : i+1])
	}
	got := func(id uint32) int64 {
		if s := c.streams[id]; s != nil {
			return s.written
		}
		return 0
	}
	if got(1) != 0 || got(3) != 1 {
		t.Fatalf("before the last byte: stream 1 %d, stream 3 %d messages; want 0 and 1", got(1), got(3))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { _ = c.wait(ctx, 1, 1); close(done) }()
	_, _ = c.Write(wire[cut:])
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("wait for stream 1's message did not return once it was written")
	}
	if got(1) != 1 {
		t.Fatalf("stream 1: %d messages, want 1", got(1))
	}
	// A stream's end (trailers, or a reset) drops its count.
	_, _ = c.Write(frame(0x1, flagEndStream, 1, []byte("trailers")))
	_, _ = c.Write(frame(frameRSTStream, 0, 3, []byte{0, 0, 0, 8}))
	if len(c.streams) != 0 {
		t.Fatalf("counts of ended streams kept: %v", c.streams)
	}
}
