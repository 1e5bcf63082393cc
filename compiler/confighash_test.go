package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigDigest: the digest follows the configuration, not the bytes:
// comments, blank lines, layout and attribute order keep it (toolbox fmt
// changes nothing else); any value, type, label or block change moves it.
func TestConfigDigest(t *testing.T) {
	const base = `sandbox = "auto"
tool "a" {
  path    = "tools/a"
  timeout = "30s"
}
capability "c" {
  backends = ["a", "b"]
  required = true
}
`
	digest := func(src string) string {
		t.Helper()
		d, err := ConfigDigest([]byte(src), "toolbox.hcl")
		if err != nil {
			t.Fatalf("ConfigDigest(%q): %v", src, err)
		}
		return d
	}
	want := digest(base)
	if len(want) != 64 {
		t.Fatalf("digest %q is not hex sha256", want)
	}
	for name, src := range map[string]string{
		"comments": "# the default toolbox\n" + base + "// more\n/* and more */\n",
		"layout": `sandbox="auto"


tool "a" {
timeout = "30s"
    path = "tools/a"
}
capability "c" {
  required = true
  backends = [ "a",
    "b", ]
}
`,
	} {
		if got := digest(src); got != want {
			t.Errorf("%s changed the digest", name)
		}
	}
	for name, src := range map[string]string{
		"a value":       replace(base, `"30s"`, `"31s"`),
		"a type":        replace(base, `required = true`, `required = "true"`),
		"a label":       replace(base, `tool "a"`, `tool "b"`),
		"a block type":  replace(base, `tool "a"`, `plugin "a"`),
		"a new block":   base + "builtin \"process\" {}\n",
		"a list order":  replace(base, `["a", "b"]`, `["b", "a"]`),
		"a heredoc":     replace(base, `"tools/a"`, "<<EOT\ntools/a\nEOT\n"), // its value ends in a newline
		"a block order": base[strings.Index(base, "capability"):] + base[:strings.Index(base, "capability")],
	} {
		if got := digest(src); got == want {
			t.Errorf("%s kept the digest", name)
		}
	}
	if _, err := ConfigDigest([]byte("sandbox = auto\n"), "toolbox.hcl"); err == nil {
		t.Error("a bare word was digested")
	}

	// Load records it; the file form agrees.
	path := filepath.Join(t.TempDir(), "toolbox.hcl")
	if err := os.WriteFile(path, []byte("sandbox = \"none\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ConfigDigestFile(path); err != nil || d != cfg.Digest || d != digest("sandbox = \"none\"\n") {
		t.Errorf("Load's digest %q, ConfigDigestFile %q (%v)", cfg.Digest, d, err)
	}
}

// replace replaces the first old in s; old must be there.
func replace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("no " + old)
	}
	return strings.Replace(s, old, new, 1)
}
