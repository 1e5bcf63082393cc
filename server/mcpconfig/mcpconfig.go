package mcpconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Client is an MCP client whose configuration this package writes.
type Client string

// The supported clients.
const (
	ClaudeCode    Client = "claude-code"
	ClaudeDesktop Client = "claude-desktop"
	Cursor        Client = "cursor"
	VSCode        Client = "vscode"
	Codex         Client = "codex"
	Gemini        Client = "gemini"
)

// Clients lists the supported clients, in the order help shows them.
var Clients = []Client{ClaudeCode, ClaudeDesktop, Cursor, VSCode, Codex, Gemini}

// ErrUnknownClient is returned (wrapped) for a client not in Clients.
var ErrUnknownClient = errors.New("unknown MCP client")

// ParseClient returns the client named name, or an error wrapping
// ErrUnknownClient that lists the supported ones.
func ParseClient(name string) (Client, error) {
	if c := Client(name); slices.Contains(Clients, c) {
		return c, nil
	}
	return "", fmt.Errorf("%w %q; use one of %s", ErrUnknownClient, name, ClientNames())
}

// ClientNames lists the supported clients' names, comma-separated.
func ClientNames() string {
	names := make([]string, len(Clients))
	for i, c := range Clients {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// Server is the entry a client needs to start toolbox mcp over stdio.
type Server struct {
	// Name is the entry's key in the client's servers ("toolbox" usually):
	// 1 to 64 letters, digits, "_" or "-" (a bare key in TOML too).
	Name string
	// Command is the absolute path of the toolbox binary, or "toolbox"
	// (found on PATH) in a project-scoped file (Client.ProjectScoped).
	Command string
	// Args are the command's arguments: "mcp", then paths: absolute in a
	// user's file, relative to the project in a project's (InProject).
	Args []string
}

// The regular expressions are compiled on first use: this package is
// linked into the toolbox binary, and compiling them at initialisation
// cost every `toolbox run` 0.3 ms (issue 13).
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// check refuses a name clients or TOML would not take as it is, a
// relative command other than a bare name looked up on PATH (clients
// start servers from a directory of their own),
// and text that JSON and TOML cannot hold as it is (encoding/json would
// silently replace invalid UTF-8).
func (s Server) check() error {
	if !nameRE().MatchString(s.Name) {
		return fmt.Errorf("server name %q: use 1 to 64 letters, digits, _ or -", s.Name)
	}
	if !filepath.IsAbs(s.Command) && !bareCommand(s.Command) {
		return fmt.Errorf("command %q is neither an absolute path nor a program name found on PATH", s.Command)
	}
	for _, a := range append([]string{s.Command}, s.Args...) {
		if !utf8.ValidString(a) {
			return fmt.Errorf("%q is not valid UTF-8, which client configuration files cannot hold", a)
		}
	}
	return nil
}

// ParseError is a client file that cannot be read, so is not rewritten.
type ParseError struct {
	// File is the file's path ("" when parsing bytes alone).
	File string
	// Line is the 1-based line of the problem, 0 when unknown.
	Line int
	// Reason says what is wrong.
	Reason string
}

func (e *ParseError) Error() string {
	where := e.File
	if where == "" {
		where = "the file"
	}
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	return fmt.Sprintf("%s: %s", where, e.Reason)
}

// Snippet returns the client's configuration holding only s, in the
// client's format (a JSON document, or a TOML table for Codex), ending in a
// newline.
func Snippet(c Client, s Server) ([]byte, error) {
	return Merge(c, nil, s)
}

// Merge returns the client file existing (nil or blank when there is none)
// with s set as the entry named s.Name, replacing an entry of that name,
// every other key kept. A file that cannot be read is a *ParseError.
func Merge(c Client, existing []byte, s Server) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if bareCommand(s.Command) && !c.ProjectScoped() {
		return nil, fmt.Errorf("command %q: %s's file is the user's, which names toolbox by its absolute path", s.Command, c)
	}
	switch c {
	case Codex:
		return mergeTOML(existing, s)
	case VSCode:
		return mergeJSON(existing, "servers", jsonEntry(s, true), s.Name)
	case ClaudeCode:
		return mergeJSON(existing, "mcpServers", jsonEntry(s, true), s.Name)
	case ClaudeDesktop, Cursor, Gemini:
		return mergeJSON(existing, "mcpServers", jsonEntry(s, false), s.Name)
	}
	_, err := ParseClient(string(c))
	return nil, err
}

// Places says where a client's files are: the user's home, the workspace,
// the OS and the environment (APPDATA, XDG_CONFIG_HOME, CODEX_HOME).
type Places struct {
	// Home is the user's home directory.
	Home string
	// Workspace is the project directory the entry confines toolbox to.
	Workspace string
	// GOOS is the operating system ("linux", "darwin", "windows").
	GOOS string
	// Getenv reads the environment; nil reads nothing.
	Getenv func(string) string
}

func (p Places) env(name string) string {
	if p.Getenv == nil {
		return ""
	}
	return p.Getenv(name)
}

// File returns the file the client reads its servers from, which Write
// merges into (see the package doc for why each). It fails when that file
// is the user's and p.Home is empty.
func File(c Client, p Places) (string, error) {
	if (c == Codex || c == ClaudeDesktop) && p.Home == "" {
		return "", fmt.Errorf("%s's configuration is in the user's home directory, which is unknown", c)
	}
	switch c {
	case ClaudeCode:
		return filepath.Join(p.Workspace, ".mcp.json"), nil
	case Cursor:
		return filepath.Join(p.Workspace, ".cursor", "mcp.json"), nil
	case VSCode:
		return filepath.Join(p.Workspace, ".vscode", "mcp.json"), nil
	case Gemini:
		return filepath.Join(p.Workspace, ".gemini", "settings.json"), nil
	case Codex:
		if h := p.env("CODEX_HOME"); h != "" {
			return filepath.Join(h, "config.toml"), nil
		}
		return filepath.Join(p.Home, ".codex", "config.toml"), nil
	case ClaudeDesktop:
		const name = "claude_desktop_config.json"
		switch p.GOOS {
		case "darwin":
			return filepath.Join(p.Home, "Library", "Application Support", "Claude", name), nil
		case "windows":
			if a := p.env("APPDATA"); a != "" {
				return filepath.Join(a, "Claude", name), nil
			}
			return filepath.Join(p.Home, "AppData", "Roaming", "Claude", name), nil
		default:
			// No official Linux build; its community builds read here.
			if x := p.env("XDG_CONFIG_HOME"); x != "" {
				return filepath.Join(x, "Claude", name), nil
			}
			return filepath.Join(p.Home, ".config", "Claude", name), nil
		}
	}
	_, err := ParseClient(string(c))
	return "", err
}
