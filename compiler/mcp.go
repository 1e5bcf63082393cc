package compiler

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// MCPServerDecl is one mcp_server block (DESIGN.md §3, issue 14): an MCP
// server run over stdio whose tools become locked tools.
//
//	mcp_server "fs" {
//	  command = ["node", "npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "data"]
//	  entry   = "npm/.../index.js"  # optional: the script an interpreter runs (found for node, python...)
//	  env     = { LOG_LEVEL = "warn" }
//	  envdir  = true                # optional: <envdir_root>/fs, one file per variable
//	  sandbox {                     # a tool's runtime.sandbox fields and refusal rules
//	    fs { read = ["npm", "data"] }
//	    net = "none"
//	  }                             # or instead: unconfined = true (must be explicit)
//	  tools   = ["read_text_file"]  # optional subset, by the server's names
//	  rename  = { read_text_file = "fs_read" }
//	  timeout = "30s"               # optional default call timeout
//	  limits { memory = "1GiB" }    # optional, as a tool's limits block
//	}
//
// or, for a server reached over streamable HTTP (nothing runs locally, so
// nothing is sandboxed; https, or http to a loopback address):
//
//	mcp_server "remote" {
//	  url    = "https://mcp.example.com/mcp"
//	  envdir = true                 # <envdir_root>/remote
//	  token  = "TOKEN"              # its file holds the bearer token
//	}
type MCPServerDecl struct {
	Name string
	// Command is as written; Exe is Command[0] resolved: a path with a
	// slash against the toolbox file's directory, a bare name on PATH.
	Command []string
	Exe     string
	// URL is the endpoint of a server reached over streamable HTTP (no
	// Command then); Token names the variable of its envdir sent as a
	// bearer token.
	URL   string
	Token string
	// PathArgs are the indexes of the arguments that name an existing file
	// or directory relative to the toolbox file (manifest.MCPServer.PathArgs).
	PathArgs []int
	// Entry is the absolute path of the entry script to pin: the entry
	// attribute, else the first argument that is a file when Exe is an
	// interpreter (interpreters); "" for none.
	Entry string
	Env   map[string]string
	// Envdir is `envdir = true`: the server reads <envdir_root>/<name>.
	Envdir bool
	// Sandbox has its defaults filled in and paths as written (relative
	// to the toolbox file); nil when Unconfined.
	Sandbox    *protocol.Sandbox
	Unconfined bool
	// Tools selects tools by their server name; nil means every tool.
	Tools []string
	// Rename maps a server tool name to its name in the lock.
	Rename  map[string]string
	Timeout time.Duration
	// Limits is the block's limits block (nil when absent): it overrides
	// the toolbox file's, attribute by attribute, as a tool's does.
	Limits *LimitsDecl
	Block  string
	Range  hcl.Range
}

const mcpServerFix = `confine the server: sandbox { fs { read = ["dir/of/the/server"] } net = "none" } (paths relative to this file), or write unconfined = true to run it unsandboxed as toolbox's user`

var mcpServerSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "command"}, {Name: "url"}, {Name: "token"}, {Name: "entry"}, {Name: "env"}, {Name: "envdir"},
		{Name: "unconfined"}, {Name: "tools"}, {Name: "rename"}, {Name: "timeout"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "sandbox"}, {Type: "limits"}},
}

// interpreters are the executables whose first file argument is the
// program they run: the entry script locked beside the executable.
var interpreters = regexp.MustCompile(`^(node|nodejs|deno|bun|python[0-9.]*|pypy[0-9.]*|ruby|perl|php|bash|sh|dash)$`)

// mcpServer reads an mcp_server block into l.cfg.MCPServers.
func (l *loader) mcpServer(b *hcl.Block, block string) {
	c, hd := b.Body.Content(mcpServerSchema)
	l.diags = append(l.diags, fromHCL(hd, block)...)
	if hd.HasErrors() {
		return
	}
	d := &MCPServerDecl{Name: b.Labels[0], Block: block, Range: b.DefRange}
	if !l.claim(d.Name, b.LabelRanges[0], block) {
		return
	}
	ok := true
	switch cmd, url := c.Attributes["command"], c.Attributes["url"]; {
	case cmd != nil && url != nil:
		l.add(at(url.Expr.Range(), block, "both command and url", "run the server with command = [...], or reach it with url = \"https://...\""))
		return
	case url != nil:
		if l.mcpRemote(d, url, c) {
			l.cfg.MCPServers = append(l.cfg.MCPServers, d)
		}
		return
	case cmd == nil:
		l.add(at(b.DefRange, block, "command is missing", `write command = ["program", "arg", ...], or url = "https://..." for a server over streamable HTTP`))
		return
	default:
		ok = l.mcpCommand(d, cmd) && ok
	}
	if a := c.Attributes["token"]; a != nil {
		l.add(at(a.Expr.Range(), block, "token is for a server reached by url", "give a local server its token in env or its envdir"))
		ok = false
	}
	if a := c.Attributes["entry"]; a != nil {
		if p, sok := l.str(a, block); sok {
			d.Entry = l.resolve(p)
			if st, err := os.Stat(d.Entry); err != nil || !st.Mode().IsRegular() {
				l.add(at(a.Expr.Range(), block, fmt.Sprintf("entry %q is not a file", p), "name the script the interpreter runs (relative paths are relative to the toolbox file)"))
				ok = false
			}
		} else {
			ok = false
		}
	} else if ok {
		d.Entry = l.findEntry(d)
	}
	if a := c.Attributes["env"]; a != nil {
		m, mok := l.strMap(a, block)
		d.Env, ok = m, ok && mok
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"envdir", &d.Envdir}, {"unconfined", &d.Unconfined}} {
		if a := c.Attributes[f.name]; a != nil {
			v, bok := l.boolean(a, block)
			*f.dst, ok = v, ok && bok
		}
	}
	if d.Envdir && l.cfg.EnvdirRoot == "" {
		l.add(at(c.Attributes["envdir"].Expr.Range(), block, "envdir = true but the toolbox file sets no envdir_root", fmt.Sprintf("set envdir_root and create <envdir_root>/%s", d.Name)))
		ok = false
	}
	if a := c.Attributes["timeout"]; a != nil {
		ok = l.mcpTimeout(d, a) && ok
	}
	ok = l.mcpSelection(d, c) && ok
	lim, lok := l.limitsBlock(c.Blocks, block)
	d.Limits, ok = lim, ok && lok
	sandboxes := blocksOf(c.Blocks, "sandbox")
	switch n := len(sandboxes); {
	case n > 1:
		l.add(at(sandboxes[1].DefRange, block, "sandbox is declared twice", "keep one sandbox block"))
		ok = false
	case n == 1 && d.Unconfined:
		l.add(at(sandboxes[0].DefRange, block, "both a sandbox block and unconfined = true", "keep the sandbox block to confine the server, or remove it to run it unconfined"))
		ok = false
	case n == 0 && !d.Unconfined:
		l.add(at(b.DefRange, block, "an MCP server needs a sandbox declaration or unconfined = true", mcpServerFix))
		ok = false
	case n == 1:
		if d.Sandbox = l.sandboxBlock(sandboxes[0], block); d.Sandbox == nil {
			ok = false
		}
	}
	if ok {
		l.cfg.MCPServers = append(l.cfg.MCPServers, d)
	}
}

// mcpRemote reads a block that reaches its server over streamable HTTP:
// url, an optional token from its envdir, envdir, tools, rename and
// timeout. Nothing of a local process may be declared (command, entry,
// env, sandbox, unconfined): the server runs elsewhere. The URL must be
// https, or http to a loopback address, without credentials.
func (l *loader) mcpRemote(d *MCPServerDecl, a *hcl.Attribute, c *hcl.BodyContent) bool {
	ok := true
	for _, name := range []string{"entry", "env", "unconfined"} {
		if x := c.Attributes[name]; x != nil {
			l.add(at(x.Expr.Range(), d.Block, fmt.Sprintf("%s is for a server run by command, not one reached by url", name), "remove it"))
			ok = false
		}
	}
	for _, b := range c.Blocks {
		what := map[string]string{"sandbox": "sandbox it", "limits": "limit its resources"}[b.Type]
		l.add(at(b.DefRange, d.Block, "a server reached by url runs elsewhere: toolbox cannot "+what, "remove the "+b.Type+" block"))
		ok = false
	}
	raw, sok := l.str(a, d.Block)
	if !sok {
		return false
	}
	if err := checkMCPURL(raw); err != nil {
		l.add(at(a.Expr.Range(), d.Block, fmt.Sprintf("url %q: %v", raw, err), `write "https://host/path", or "http://127.0.0.1:PORT/path" for a server on this machine`))
		ok = false
	}
	d.URL = raw
	if x := c.Attributes["envdir"]; x != nil {
		v, bok := l.boolean(x, d.Block)
		d.Envdir, ok = v, ok && bok
	}
	if x := c.Attributes["token"]; x != nil {
		t, tok := l.str(x, d.Block)
		switch {
		case !tok:
			ok = false
		case !d.Envdir || l.cfg.EnvdirRoot == "":
			l.add(at(x.Expr.Range(), d.Block, "token names a variable of the envdir, and the block has none", fmt.Sprintf("set envdir_root, write envdir = true and put the token in <envdir_root>/%s/%s", d.Name, t)))
			ok = false
		case t == "" || strings.ContainsAny(t, "=/\x00"):
			l.add(at(x.Expr.Range(), d.Block, fmt.Sprintf("token %q is not a variable name", t), "name the file of the envdir that holds the token"))
			ok = false
		}
		d.Token = t
	}
	if d.Envdir && l.cfg.EnvdirRoot == "" && c.Attributes["token"] == nil {
		l.add(at(c.Attributes["envdir"].Expr.Range(), d.Block, "envdir = true but the toolbox file sets no envdir_root", fmt.Sprintf("set envdir_root and create <envdir_root>/%s", d.Name)))
		ok = false
	}
	if x := c.Attributes["timeout"]; x != nil {
		ok = l.mcpTimeout(d, x) && ok
	}
	return l.mcpSelection(d, c) && ok
}

// checkMCPURL accepts https URLs, and http ones to a loopback host (a
// bearer token must not cross a network in the clear), without
// credentials in the URL.
func checkMCPURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err
	case u.User != nil:
		return errors.New("credentials in a URL end up in logs; give the token with token = \"VAR\"")
	case u.Host == "":
		return errors.New("no host")
	case u.Scheme == "https":
		return nil
	case u.Scheme != "http":
		return fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if h := u.Hostname(); h == "localhost" {
		return nil
	} else if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errors.New("plain http is accepted only to a loopback address")
}

// mcpCommand reads command and resolves its executable.
func (l *loader) mcpCommand(d *MCPServerDecl, a *hcl.Attribute) bool {
	list, ok := l.strList(a, d.Block)
	if !ok {
		return false
	}
	if len(list) == 0 || list[0] == "" {
		l.add(at(a.Expr.Range(), d.Block, "command is empty", `write command = ["program", "arg", ...]`))
		return false
	}
	d.Command = list
	if strings.ContainsRune(list[0], '/') {
		d.Exe = l.resolve(list[0])
	} else {
		p, err := exec.LookPath(list[0])
		if err != nil {
			l.add(at(a.Expr.Range(), d.Block, fmt.Sprintf("command %q is not on PATH", list[0]), "install it, or give its path"))
			return false
		}
		if d.Exe, err = filepath.Abs(p); err != nil {
			d.Exe = p
		}
	}
	for i, arg := range list[1:] {
		if arg == "" || strings.HasPrefix(arg, "-") || filepath.IsAbs(arg) {
			continue
		}
		if _, err := os.Stat(l.resolve(arg)); err == nil {
			d.PathArgs = append(d.PathArgs, i+1)
		}
	}
	return l.executable(d.Exe, a.Expr.Range(), d.Block)
}

// findEntry is the entry script of an interpreter's command: the first
// argument that is not an option and names a regular file. Symlinks of
// the executable are followed (node may be a link to nodejs).
func (l *loader) findEntry(d *MCPServerDecl) string {
	exe := d.Exe
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if !interpreters.MatchString(filepath.Base(d.Exe)) && !interpreters.MatchString(filepath.Base(exe)) {
		return ""
	}
	for _, arg := range d.Command[1:] {
		if strings.HasPrefix(arg, "-") {
			continue
		}
		p := l.resolve(arg)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
		return ""
	}
	return ""
}

// mcpTimeout reads timeout.
func (l *loader) mcpTimeout(d *MCPServerDecl, a *hcl.Attribute) bool {
	s, ok := l.str(a, d.Block)
	if !ok {
		return false
	}
	t, err := time.ParseDuration(s)
	if err != nil || t <= 0 {
		l.add(at(a.Expr.Range(), d.Block, fmt.Sprintf("invalid timeout %q", s), `write a positive duration such as "30s" or "2m"`))
		return false
	}
	d.Timeout = t
	return true
}

// mcpSelection reads tools and rename, and makes the lock names known
// now known to the capability check (checkBackends).
func (l *loader) mcpSelection(d *MCPServerDecl, c *hcl.BodyContent) bool {
	ok := true
	if a := c.Attributes["tools"]; a != nil {
		list, lok := l.strList(a, d.Block)
		seen := map[string]bool{}
		for _, n := range list {
			if n == "" || seen[n] {
				l.add(at(a.Expr.Range(), d.Block, fmt.Sprintf("tools lists %q twice or empty", n), "list each tool of the server once"))
				lok = false
			}
			seen[n] = true
		}
		if list == nil {
			list = []string{}
		}
		d.Tools, ok = list, lok
	}
	if a := c.Attributes["rename"]; a != nil {
		m, mok := l.strMap(a, d.Block)
		ok = ok && mok
		for _, from := range slices.Sorted(maps.Keys(m)) {
			to := m[from]
			switch {
			case !mcpnames.ValidName(to):
				l.add(at(a.Expr.Range(), d.Block, fmt.Sprintf("rename: invalid name %q for tool %q", to, from), "use 1 to 64 letters, digits, '_' or '-' (what MCP clients accept)"))
				ok = false
			case d.Tools != nil && !slices.Contains(d.Tools, from):
				l.add(at(a.Expr.Range(), d.Block, fmt.Sprintf("rename: tool %q is not in tools", from), "rename only the tools the block selects"))
				ok = false
			}
		}
		d.Rename = m
	}
	if d.Tools == nil {
		l.openNames = true // any name may come from this server
	}
	for _, n := range d.Tools {
		l.toolNames[d.lockName(n)] = true
	}
	for _, to := range d.Rename {
		l.toolNames[to] = true
	}
	return ok
}

// lockName is the name in the lock of the server's tool name.
func (d *MCPServerDecl) lockName(name string) string {
	if to, ok := d.Rename[name]; ok {
		return to
	}
	return name
}

// strMap reads an object of strings (env = { A = "1" }).
func (l *loader) strMap(a *hcl.Attribute, block string) (map[string]string, bool) {
	v, ok := l.value(a, block)
	if !ok {
		return nil, false
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		l.add(at(a.Expr.Range(), blockOr(block, a.Name), fmt.Sprintf("%s must be an object of strings, got %s", a.Name, t.FriendlyName()), `write { NAME = "value" }`))
		return nil, false
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			l.add(at(a.Expr.Range(), blockOr(block, a.Name), fmt.Sprintf("%s.%s must be a string", a.Name, k.AsString()), `write { NAME = "value" }`))
			return nil, false
		}
		out[k.AsString()] = e.AsString()
	}
	return out, true
}
