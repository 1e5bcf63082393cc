package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolbox-dev/toolbox/protocol"
)

// MCPServer is one locked MCP server (the toolbox file's mcp_server block,
// DESIGN.md §3, §4): how it is started, confined and identified. The
// launcher starts it only from these facts, verifies Command[0] (and
// Entry) against their hashes first, and refuses every call whose
// tools/list differs from the lock (its tools are the lock's Tools of kind
// KindMCP naming it).
//
// A server reached over streamable HTTP has a URL instead of a Command:
// no executable, entry script or sandbox, mechanism "none".
type MCPServer struct {
	// Command is the resolved command line: Command[0] is the executable,
	// a slash path relative to the lock's directory when it lies inside it,
	// else absolute; the arguments follow verbatim. Empty when URL is set.
	Command []string `json:"command,omitempty"`
	// URL is the MCP endpoint of a server reached over streamable HTTP;
	// "" for a server run over stdio.
	URL string `json:"url,omitempty"`
	// TokenEnv names the variable of the server's envdir whose value is
	// sent as a bearer token (URL servers only); "" for none.
	TokenEnv string `json:"token_env,omitempty"`
	// PathArgs are the indexes (1 or more) of the arguments of Command
	// that name a file or directory relative to the lock's directory: the
	// launcher gives the server their absolute paths, since the server
	// runs in no particular directory (its sandbox may not grant the
	// lock's). Sorted; empty when none.
	PathArgs []int `json:"path_args,omitempty"`
	// SHA256 is the hex sha256 of the executable; "" when URL is set.
	SHA256 string `json:"sha256,omitempty"`
	// Entry is the entry script an interpreter runs (node, python...),
	// hashed like the executable; nil when none was given or found.
	Entry *HashedFile `json:"entry,omitempty"`
	// Platform is GOOS/GOARCH of the machine that locked it.
	Platform string `json:"platform"`
	// Env are the literal variables of the block's env, given to the server.
	Env map[string]string `json:"env,omitempty"`
	// Envdir is the server's envdir (<envdir_root>/<name>), relative to the
	// lock's directory unless the root is absolute; "" when none.
	Envdir string `json:"envdir,omitempty"`
	// Mechanism is "none", "bwrap" or "landlock" (what auto chose).
	Mechanism string `json:"mechanism"`
	// Sandbox is the declaration with its defaults filled in (net, tmp);
	// its fs paths are slash paths relative to the lock's directory unless
	// absolute. nil when the block declares none (Mechanism "none").
	Sandbox *protocol.Sandbox `json:"sandbox,omitempty"`
	// Paths maps every declared sandbox path (fs read and write, as the
	// lock keeps them in Sandbox) to what it resolved to at lock time,
	// every symlink followed, relative to the lock's directory unless
	// outside it: a start opens that target without following symlinks, so
	// a link planted after the lock redirects nothing (as Runtime.Paths of
	// a tool, DESIGN.md §6). Required for every declared path.
	Paths map[string]string `json:"paths,omitempty"`
	// Limits are the server's resource limits (the block's limits, else
	// the toolbox file's, else the defaults; nil = none), applied to its
	// process as to a tool's (DESIGN.md §4).
	Limits *Limits `json:"limits,omitempty"`
	// TimeoutSeconds is the operator's default call timeout (0 = the
	// program default).
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// Info is what the server announced in its initialize result.
	Info MCPImplementation `json:"server_info"`
	// Subset says the block selects tools (tools = [...]): the server may
	// list other tools, which are ignored. Without it the server must list
	// exactly the locked tools: one more is drift too.
	Subset bool `json:"subset,omitempty"`
}

// HashedFile is a file pinned by its sha256: Path is a slash path relative
// to the lock's directory when inside it, else absolute.
type HashedFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// MCPImplementation is an MCP server's serverInfo: its name and version.
type MCPImplementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// MCPTool pins one tool of an MCP server: the server (a key of
// Lock.MCPServers), the tool's name there (the lock's name may be a
// rename), and its whole wire object as tools/list gave it, in canonical
// form (CanonicalJSON), with that form's sha256.
type MCPTool struct {
	Server string `json:"server"`
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	// Definition is the tool's object (name, title, description,
	// inputSchema, outputSchema, annotations... whatever the server sent).
	// What models see of the tool comes from here, never from the server.
	Definition json.RawMessage `json:"definition"`
}

// Callable says t can serve a call by what the lock holds: it has a
// describe document, or it is an MCP tool with its pinned definition. A
// nil tool is not callable. The probe status is not considered.
func (t *Tool) Callable() bool {
	return t != nil && (t.Describe != nil || (t.Kind == KindMCP && t.MCP != nil))
}

// CanonicalJSON is the canonical form of one JSON value, which an MCP
// tool's pin hashes: object keys sorted (by their UTF-8 bytes), no
// insignificant white space, numbers exactly as written (1.0 stays 1.0,
// 1e3 stays 1e3), strings re-escaped the one way encoding/json writes
// them without HTML escaping (so "\u00e9" and "é" are the same string),
// and invalid UTF-8 replaced by U+FFFD. A duplicated key keeps its last
// value. Errors: raw is not exactly one JSON value.
func CanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonical JSON: unexpected data after the value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DefinitionSHA256 is the hex sha256 of raw's CanonicalJSON: the pin of an
// MCP tool's definition.
func DefinitionSHA256(raw []byte) (string, error) {
	c, err := CanonicalJSON(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// maxDefinitionLines bounds what DefinitionDiff reports of one tool.
const maxDefinitionLines = 8

// DefinitionDiff says how the definition of MCP tool name changed from
// locked to live, one line per differing field, named by its path from the
// tool object ("description", "inputSchema.properties.path.type"), with
// both values shortened: the words `toolbox lock --check` and a refused
// call share. Nil when both are the same JSON value. A field present on
// one side only is "added" or "removed". At most 8 lines, the last saying
// how many more fields differ.
func DefinitionDiff(name string, locked, live json.RawMessage) []string {
	paths := JSONDiff(locked, live)
	var out []string
	for i, p := range paths {
		if i == maxDefinitionLines-1 && len(paths) > maxDefinitionLines {
			out = append(out, fmt.Sprintf("tool %q: %d more fields changed", name, len(paths)-i))
			break
		}
		out = append(out, fmt.Sprintf("tool %q: %s", name, p))
	}
	return out
}

// JSONDiff lists how the JSON value b differs from a, one entry per
// differing field: its path ("inputSchema.properties.path.type", "" for
// the whole value) and both values shortened, e.g. `description changed:
// "a" -> "b"`, `annotations added ({...})`. Numbers compare as written.
// Nil when both are the same value; one entry when either is not JSON.
func JSONDiff(a, b json.RawMessage) []string {
	av, errA := decodeNumbers(a)
	bv, errB := decodeNumbers(b)
	if errA != nil || errB != nil {
		if bytes.Equal(a, b) {
			return nil
		}
		return []string{"the whole definition changed (not comparable as JSON)"}
	}
	var paths []string
	jsonDiff("", av, bv, &paths)
	return paths
}

func decodeNumbers(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// jsonDiff appends a line per difference between a and b below path.
func jsonDiff(path string, a, b any, out *[]string) {
	field := path
	if field == "" {
		field = "the whole definition"
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			av, ina := am[k]
			bv, inb := bm[k]
			switch {
			case !ina:
				*out = append(*out, fmt.Sprintf("%s added (%s)", sub, shortJSON(bv)))
			case !inb:
				*out = append(*out, fmt.Sprintf("%s removed (was %s)", sub, shortJSON(av)))
			default:
				jsonDiff(sub, av, bv, out)
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			jsonDiff(path+"["+strconv.Itoa(i)+"]", al[i], bl[i], out)
		}
		return
	}
	if sameValue(a, b) {
		return
	}
	if as, ok := a.(string); ok {
		if bs, ok := b.(string); ok {
			// Two texts: show both from a little before where they part,
			// so that a change at the end of a long description is seen.
			as, bs = fromDifference(as, bs)
			a, b = as, bs
		}
	}
	*out = append(*out, fmt.Sprintf("%s changed: %s -> %s", field, shortJSON(a), shortJSON(b)))
}

// fromDifference cuts the common beginning of a and b, but for its last
// 20 bytes, when that beginning is longer than 40 bytes, marking the cut
// with "…"; the cut falls on a character boundary.
func fromDifference(a, b string) (string, string) {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n <= 40 {
		return a, b
	}
	cut := n - 20
	for cut > 0 && !utf8.RuneStart(a[cut]) {
		cut--
	}
	return "…" + a[cut:], "…" + b[cut:]
}

func sameValue(a, b any) bool {
	ea, errA := json.Marshal(a)
	eb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ea, eb)
}

// shortJSON is v's compact JSON, cut to 80 bytes on a character boundary.
func shortJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "?"
	}
	return protocol.Truncate(strings.TrimSuffix(buf.String(), "\n"), 80)
}

// mcpTool checks a tool of kind KindMCP: no binary of its own, no
// describe document, and a pin whose hash is its definition's.
func (v *validator) mcpTool(at string, t *Tool) {
	switch {
	case t.Kind != KindMCP:
		v.addf("%s: mcp is set but kind is %q, want %q", at, t.Kind, KindMCP)
		return
	case t.MCP == nil:
		v.addf("%s: mcp is missing (required for kind %q)", at, KindMCP)
		return
	}
	if t.Path != "" || t.SHA256 != "" {
		v.addf("%s: path and sha256 belong to its MCP server, not to the tool", at)
	}
	if t.Describe != nil || t.Command != "" || len(t.Bindings) > 0 {
		v.addf("%s: an MCP tool has no describe document, command or bindings", at)
	}
	m := t.MCP
	if m.Server == "" || m.Name == "" {
		v.addf("%s: mcp.server and mcp.name are required", at)
	}
	v.sha256(at+": mcp.sha256", m.SHA256)
	sum, err := DefinitionSHA256(m.Definition)
	switch {
	case err != nil:
		v.addf("%s: mcp.definition is not JSON: %v", at, err)
	case sum != m.SHA256:
		v.addf("%s: mcp.sha256 is not the sha256 of mcp.definition", at)
	}
}

// mcpServers checks every locked MCP server and that every MCP tool names
// one of them.
func (v *validator) mcpServers(l *Lock) {
	for _, name := range sortedKeys(l.MCPServers) {
		at := fmt.Sprintf("mcp server %q", name)
		s := l.MCPServers[name]
		if s == nil {
			v.addf("%s is null", at)
			continue
		}
		if s.URL != "" {
			v.mcpRemote(at, s)
			continue
		}
		if s.TokenEnv != "" {
			v.addf("%s: token_env is for a server reached by url", at)
		}
		if len(s.Command) == 0 || s.Command[0] == "" {
			v.addf("%s: command is missing", at)
		}
		for i, n := range s.PathArgs {
			if n < 1 || n >= len(s.Command) || (i > 0 && n <= s.PathArgs[i-1]) {
				v.addf("%s: path_args %v are not sorted indexes of command arguments", at, s.PathArgs)
				break
			}
		}
		v.sha256(at+": sha256", s.SHA256)
		if s.Entry != nil {
			if s.Entry.Path == "" {
				v.addf("%s: entry.path is missing", at)
			}
			v.sha256(at+": entry.sha256", s.Entry.SHA256)
		}
		if goos, goarch, ok := strings.Cut(s.Platform, "/"); !ok || goos == "" || goarch == "" {
			v.addf("%s: platform is %q, want GOOS/GOARCH", at, s.Platform)
		}
		v.oneOf(at+": mechanism", s.Mechanism, toolMechanisms)
		if sb := s.Sandbox; sb != nil {
			if s.Mechanism == "none" {
				v.addf("%s: declares a sandbox but mechanism is \"none\"", at)
			}
			v.oneOf(at+": sandbox.net", sb.Net, []string{"host", "none"})
			v.oneOf(at+": sandbox.tmp", sb.Tmp, []string{"shared", "private"})
		}
		v.mcpPaths(at, s)
		if s.TimeoutSeconds < 0 {
			v.addf("%s: timeout_seconds is negative", at)
		}
	}
	pinned := map[[2]string]string{}
	for _, name := range sortedKeys(l.Tools) {
		t := l.Tools[name]
		if t == nil || t.MCP == nil || t.MCP.Server == "" {
			continue
		}
		if l.MCPServers[t.MCP.Server] == nil {
			v.addf("tool %q: mcp.server %q is not a locked MCP server", name, t.MCP.Server)
		}
		key := [2]string{t.MCP.Server, t.MCP.Name}
		if first, dup := pinned[key]; dup {
			v.addf("tool %q: pins tool %q of mcp server %q, as tool %q does", name, t.MCP.Name, t.MCP.Server, first)
		}
		pinned[key] = name
	}
}

// mcpPaths checks that every declared sandbox path of s has its lock-time
// resolution in paths, and that paths holds nothing else.
func (v *validator) mcpPaths(at string, s *MCPServer) {
	var declared []string
	if s.Sandbox != nil && s.Sandbox.FS != nil {
		declared = append(slices.Clone(s.Sandbox.FS.Read), s.Sandbox.FS.Write...)
	}
	for _, p := range declared {
		if _, ws, err := protocol.WorkspacePath(p); err != nil {
			v.addf("%s: %v", at, err) // as a tool's (workspaceUses)
			continue
		} else if ws {
			continue // resolved at each call
		}
		if r, ok := s.Paths[p]; !ok || r == "" || strings.ContainsRune(r, 0) {
			v.addf("%s: paths lacks the lock-time resolution of declared path %q", at, p)
		}
	}
	for _, p := range sortedKeys(s.Paths) {
		if _, ws, _ := protocol.WorkspacePath(p); ws || !slices.Contains(declared, p) {
			v.addf("%s: paths holds %q, which its sandbox does not declare as a path resolved at lock (the workspace is resolved at each call)", at, p)
		}
	}
}

// mcpConfinement is confinement for MCP servers and their tools: a
// server declaring a sandbox is locked with a mechanism the sandbox
// setting can choose, never landlock for net: none or tmp: private; each
// of its tools carries the server's mechanism. It reports whether a
// server runs under bwrap.
func (v *validator) mcpConfinement(l *Lock) (usesBwrap bool) {
	allowed, known := choosable[l.Sandbox]
	for _, name := range sortedKeys(l.MCPServers) {
		s := l.MCPServers[name]
		if s == nil {
			continue
		}
		at := fmt.Sprintf("mcp server %q", name)
		usesBwrap = usesBwrap || s.Mechanism == "bwrap"
		if s.Sandbox == nil {
			if s.Mechanism != "none" {
				v.addf("%s: mechanism is %q but the server declares no sandbox", at, s.Mechanism)
			}
			continue
		}
		if known && !slices.Contains(allowed, s.Mechanism) {
			v.addf("%s: mechanism is %q, which sandbox %q cannot choose for a server that declares a sandbox", at, s.Mechanism, l.Sandbox)
		}
		v.landlockHonours(at+": mechanism", s.Mechanism, s.Sandbox.Net, s.Sandbox.Tmp)
	}
	for _, name := range sortedKeys(l.Tools) {
		t := l.Tools[name]
		if t == nil || t.Kind != KindMCP || t.MCP == nil {
			continue
		}
		if s := l.MCPServers[t.MCP.Server]; s != nil && t.Runtime.Mechanism != s.Mechanism {
			v.addf("tool %q: runtime.mechanism is %q, but its mcp server %q is locked with %q", name, t.Runtime.Mechanism, t.MCP.Server, s.Mechanism)
		}
	}
	return usesBwrap
}

// mcpRemote checks a server reached over streamable HTTP: nothing of a
// local process, an http(s) URL, a token only from its envdir.
func (v *validator) mcpRemote(at string, s *MCPServer) {
	if len(s.Command) > 0 || s.SHA256 != "" || s.Entry != nil || len(s.PathArgs) > 0 || s.Sandbox != nil || len(s.Env) > 0 || s.Mechanism != "none" {
		v.addf("%s: a server reached by url has no command, sha256, entry, path_args, env or sandbox, and mechanism \"none\"", at)
	}
	if !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "http://") {
		v.addf("%s: url %q is not http(s)", at, s.URL)
	}
	if s.TokenEnv != "" && s.Envdir == "" {
		v.addf("%s: token_env %q needs an envdir", at, s.TokenEnv)
	}
	if goos, goarch, ok := strings.Cut(s.Platform, "/"); !ok || goos == "" || goarch == "" {
		v.addf("%s: platform is %q, want GOOS/GOARCH", at, s.Platform)
	}
}

// mcpServer explains how a locked MCP server changed.
func (d *differ) mcpServer(name string, a, b *MCPServer) {
	at := fmt.Sprintf("mcp server %q", name)
	if !d.both(at, a == nil, b == nil) {
		return
	}
	d.str(at+": url", a.URL, b.URL)
	d.str(at+": token_env", a.TokenEnv, b.TokenEnv)
	if !slices.Equal(a.Command, b.Command) {
		d.addf("%s: command %q -> %q", at, a.Command, b.Command)
	}
	if !slices.Equal(a.PathArgs, b.PathArgs) {
		d.addf("%s: path arguments %v -> %v", at, a.PathArgs, b.PathArgs)
	}
	if a.SHA256 != b.SHA256 {
		d.addf("%s: executable changed (sha256 %s -> %s)", at, short(a.SHA256), short(b.SHA256))
	}
	if ea, eb := showHashed(a.Entry), showHashed(b.Entry); ea != eb {
		d.addf("%s: entry %s -> %s", at, ea, eb)
	}
	d.str(at+": platform", a.Platform, b.Platform)
	if !sameJSON(a.Env, b.Env) {
		d.addf("%s: env changed", at)
	}
	d.str(at+": envdir", a.Envdir, b.Envdir)
	d.str(at+": mechanism", a.Mechanism, b.Mechanism)
	if !sameJSON(a.Sandbox, b.Sandbox) {
		sa, _ := json.Marshal(a.Sandbox)
		sb, _ := json.Marshal(b.Sandbox)
		d.addf("%s: sandbox %s -> %s", at, sa, sb)
	}
	for _, p := range unionKeys(a.Paths, b.Paths) {
		d.str(fmt.Sprintf("%s: path %q resolves to", at, p), a.Paths[p], b.Paths[p])
	}
	d.limits(at+":", a.Limits, b.Limits)
	if a.TimeoutSeconds != b.TimeoutSeconds {
		d.addf("%s: timeout %gs -> %gs", at, a.TimeoutSeconds, b.TimeoutSeconds)
	}
	d.str(at+": server name", a.Info.Name, b.Info.Name)
	d.str(at+": server version", a.Info.Version, b.Info.Version)
	if a.Subset != b.Subset {
		d.addf("%s: subset %t -> %t", at, a.Subset, b.Subset)
	}
}

// mcpTool explains how the pin of an MCP tool changed: which server tool,
// and field by field how its definition did (DefinitionDiff).
func (d *differ) mcpTool(name string, a, b *MCPTool) {
	at := fmt.Sprintf("tool %q", name)
	switch {
	case a == nil && b == nil:
		return
	case a == nil || b == nil:
		d.addf("%s: mcp pin %s -> %s", at, showMCPTool(a), showMCPTool(b))
		return
	}
	if a.Server != b.Server || a.Name != b.Name {
		d.addf("%s: mcp pin %s -> %s", at, showMCPTool(a), showMCPTool(b))
	}
	if a.SHA256 != b.SHA256 {
		d.lines = append(d.lines, DefinitionDiff(name, a.Definition, b.Definition)...)
	}
}

func showHashed(f *HashedFile) string {
	if f == nil {
		return "(none)"
	}
	return fmt.Sprintf("%q (sha256 %s)", f.Path, short(f.SHA256))
}

func showMCPTool(m *MCPTool) string {
	if m == nil {
		return "(none)"
	}
	return fmt.Sprintf("tool %q of mcp server %q", m.Name, m.Server)
}
