package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// HelpURIPrefix starts the URI of a tool's longer help:
// toolbox://help/NAME, NAME being the MCP tool name (or the lock's name).
// The text is what `TOOL help [command]` prints, fetched on demand (DESIGN.md
// §2), never part of the tool list.
const HelpURIPrefix = "toolbox://help/"

// addHelp registers the help resource template.
func (s *Server) addHelp() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: HelpURIPrefix + "{name}",
		Name:        "help",
		MIMEType:    "text/plain",
		Description: "The longer help of a tool or capability, e.g. toolbox://help/git_history_blame: read it when a tool's description is not enough.",
	}, s.readHelp)
}

// readHelp serves toolbox://help/NAME.
func (s *Server) readHelp(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	name, ok := strings.CutPrefix(uri, HelpURIPrefix)
	if !ok || name == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	l := s.currentLock()
	lockName := ""
	if _, ok := l.Tools[name]; ok {
		lockName = name
	} else if _, ok := l.Capabilities[name]; ok {
		lockName = name
	} else {
		for n := range l.Tools {
			if mcpnames.MCPName(n) == name {
				lockName = n
			}
		}
		for n := range l.Capabilities {
			if mcpnames.MCPName(n) == name {
				lockName = n
			}
		}
	}
	if lockName == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	text, err := launcher.Help(ctx, s.lockPath, l, lockName, s.opts.CallerEnv)
	if err != nil {
		return nil, fmt.Errorf("help of %q: %w", name, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
}
