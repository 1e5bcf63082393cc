package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's connection close waits for the requests in flight without
// cancelling them (NOTES.md), so a server asked to stop (SIGTERM to
// `toolbox mcp` or `toolbox serve`) would wait for every running call: a
// go_test, a long sleep. Every request's context is therefore also
// cancelled when the server closes (Close) or when the Serve call of its
// connection ends: a cancelled call stops its tool with the declared
// cancel, then SIGKILL after the tool's stop grace, and returns.

// cancelOnShutdown is the receiving middleware that ties each request to
// the server's life and to its connection's Serve.
func (s *Server) cancelOnShutdown(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.life, cancel)()
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			if sctx := s.serving(ss); sctx != nil {
				defer context.AfterFunc(sctx, cancel)()
			}
		}
		return next(ctx, method, req)
	}
}

// serving is the context of the Serve call of ss, nil when ss is not
// served by Serve (streamable HTTP).
func (s *Server) serving(ss *mcp.ServerSession) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[ss]
}

// serveStarted records the context of the Serve call of ss; the returned
// function forgets it.
func (s *Server) serveStarted(ss *mcp.ServerSession, ctx context.Context) func() {
	s.mu.Lock()
	s.served[ss] = ctx
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.served, ss)
		s.mu.Unlock()
	}
}
