package sdk

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"reflect"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Why this file exists: grpc-go's ServerStream.SendMsg returns once the
// message is queued for the connection's writer goroutine, not once it is
// written to the socket. A plugin that emitted its last words and then
// called os.Exit (or crashed) lost them: the host got nothing of what Send
// had accepted. Here every message a server stream sends waits until its
// last byte has been handed to the socket (the kernel then delivers it to
// the host even if the plugin dies the next instant).
//
// How: the connection is wrapped (through transport credentials, the one
// hook grpc-go gives over a server's connections) by a writer that parses
// the HTTP/2 frames it writes and counts, per stream, the gRPC messages
// whose last byte went out; a stream interceptor makes each SendMsg wait
// for its own count. Counting messages from their length prefixes holds
// with or without compression.

// flushCreds are insecure transport credentials that wrap each server
// connection in a flushConn.
type flushCreds struct{}

// flushInfo is the AuthInfo of a wrapped connection: the way a stream's
// context reaches its flushConn (peer.FromContext).
type flushInfo struct {
	credentials.CommonAuthInfo
	conn *flushConn
}

func (flushInfo) AuthType() string { return "insecure" }

func (flushCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("the plugin SDK's credentials are for its server only")
}

func (flushCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c := &flushConn{Conn: raw, streams: map[uint32]*streamCount{}, changed: make(chan struct{})}
	return c, flushInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, conn: c}, nil
}

func (flushCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "insecure"}
}

func (flushCreds) Clone() credentials.TransportCredentials { return flushCreds{} }

func (flushCreds) OverrideServerName(string) error { return nil }

// grpcServer is Serve's gRPC server: go-plugin's options (TLS when the host
// asked for it, and then sends are not waited for) or, without them, the
// flushing credentials and the interceptor that waits.
func grpcServer(opts []grpc.ServerOption) *grpc.Server {
	if len(opts) == 0 {
		opts = []grpc.ServerOption{grpc.Creds(flushCreds{}), grpc.ChainStreamInterceptor(waitWritten)}
	}
	return grpc.NewServer(opts...)
}

// waitWritten makes each message a server stream sends return only once
// it is on the socket, or the stream or connection is over.
func waitWritten(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	p, _ := peer.FromContext(ctx)
	var info flushInfo
	if p != nil {
		info, _ = p.AuthInfo.(flushInfo)
	}
	id := streamID(ctx)
	if info.conn == nil || id == 0 {
		return handler(srv, ss)
	}
	defer info.conn.forget(id)
	return handler(srv, &waitingStream{ServerStream: ss, conn: info.conn, id: id})
}

// streamID is the HTTP/2 stream id of the call in ctx, 0 when unknown.
// grpc-go does not export it; it is the id field of the transport stream
// that ServerTransportStreamFromContext returns.
func streamID(ctx context.Context) uint32 {
	v := reflect.ValueOf(grpc.ServerTransportStreamFromContext(ctx))
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0
	}
	f := v.FieldByName("id")
	if !f.IsValid() || f.Kind() != reflect.Uint32 {
		return 0
	}
	return uint32(f.Uint())
}

// waitingStream is a ServerStream whose SendMsg waits for the message to be
// written.
type waitingStream struct {
	grpc.ServerStream
	conn *flushConn
	id   uint32
	sent int64 // messages sent on this stream, under the caller's lock
	mu   sync.Mutex
}

func (s *waitingStream) SendMsg(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ServerStream.SendMsg(m); err != nil {
		return err
	}
	s.sent++
	return s.conn.wait(s.Context(), s.id, s.sent)
}

// flushConn is a server connection that counts, per stream, the gRPC
// messages whose last byte it has written.
type flushConn struct {
	net.Conn

	mu      sync.Mutex
	streams map[uint32]*streamCount
	changed chan struct{} // closed and replaced when a count moves or the connection ends
	broken  bool

	// The frame being parsed (only the writer goroutine touches these).
	head     [9]byte
	headN    int
	left     int // payload bytes of the current frame still to come
	dataOf   uint32
	endAfter bool // the current frame ends its stream
}

// streamCount is where one stream is in its messages.
type streamCount struct {
	written int64   // messages whose last byte was written
	prefix  [5]byte // the current message's length prefix, as read so far
	prefixN int
	left    int64 // bytes of the current message's body still to come
}

// h2 frame types and flags (RFC 9113 §6).
const (
	frameData      = 0x0
	frameRSTStream = 0x3
	flagEndStream  = 0x1
	flagPadded     = 0x8
)

func (c *flushConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.parse(p[:n])
	if err != nil {
		c.end()
	}
	return n, err
}

func (c *flushConn) Close() error {
	c.end()
	return c.Conn.Close()
}

// end wakes every waiter for good: nothing more will be written.
func (c *flushConn) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.broken {
		c.broken = true
		close(c.changed)
	}
}

// parse follows the frames in p, counting completed messages.
func (c *flushConn) parse(p []byte) {
	moved := false
	for len(p) > 0 {
		if c.left == 0 && c.headN < len(c.head) {
			var full bool
			if p, full = fill(c.head[:], &c.headN, p); !full {
				break
			}
			c.left = int(c.head[0])<<16 | int(c.head[1])<<8 | int(c.head[2])
			c.dataOf = 0
			id := binary.BigEndian.Uint32(c.head[5:9]) &^ (1 << 31)
			c.endAfter = c.head[4]&flagEndStream != 0 || c.head[3] == frameRSTStream
			if c.head[3] == frameData && c.head[4]&flagPadded == 0 {
				c.dataOf = id // grpc-go pads nothing; a padded frame is not counted
			}
			if c.left == 0 {
				c.frameDone(id)
			}
			continue
		}
		k := min(len(p), c.left)
		if c.dataOf != 0 && c.data(c.dataOf, p[:k]) {
			moved = true
		}
		c.left -= k
		p = p[k:]
		if c.left == 0 {
			c.frameDone(binary.BigEndian.Uint32(c.head[5:9]) &^ (1 << 31))
		}
	}
	if moved {
		c.mu.Lock()
		if !c.broken {
			close(c.changed)
			c.changed = make(chan struct{})
		}
		c.mu.Unlock()
	}
}

// fill copies from p into dst after the *n bytes it holds, and returns
// the rest of p and whether dst is now full.
func fill(dst []byte, n *int, p []byte) ([]byte, bool) {
	k := copy(dst[*n:], p)
	*n += k
	return p[k:], *n == len(dst)
}

// frameDone ends the current frame; a frame that ends its stream (END_STREAM,
// RST_STREAM) drops the stream's count.
func (c *flushConn) frameDone(id uint32) {
	c.headN = 0
	if c.endAfter {
		c.forget(id)
	}
}

// data takes a DATA payload of stream id and reports whether a message
// was completed.
func (c *flushConn) data(id uint32, p []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.streams[id]
	if s == nil {
		s = &streamCount{}
		c.streams[id] = s
	}
	done := false
	for len(p) > 0 {
		if s.left == 0 && s.prefixN < len(s.prefix) {
			var full bool
			if p, full = fill(s.prefix[:], &s.prefixN, p); !full {
				break
			}
			s.left = int64(binary.BigEndian.Uint32(s.prefix[1:5]))
		} else {
			k := int(min(int64(len(p)), s.left))
			s.left -= int64(k)
			p = p[k:]
		}
		if s.left == 0 && s.prefixN == len(s.prefix) {
			s.prefixN = 0
			s.written++
			done = true
		}
	}
	return done
}

// forget drops the count of stream id (its call is over).
func (c *flushConn) forget(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.streams, id)
}

// wait returns once n messages of stream id have been written, the
// connection is over, or ctx ends (the call is over: nothing waits on a
// host that went away).
func (c *flushConn) wait(ctx context.Context, id uint32, n int64) error {
	for {
		c.mu.Lock()
		s, broken, changed := c.streams[id], c.broken, c.changed
		written := int64(0)
		if s != nil {
			written = s.written
		}
		c.mu.Unlock()
		if written >= n || broken {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}
