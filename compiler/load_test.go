package compiler

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLoadFixtures walks testdata/load: every `# want: REGEXP` comment is
// an error Load must report (a regexp matched against one line of the
// error), and Load must report nothing else. good.hcl has no want.
func TestLoadFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "load", "*.hcl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var wants []*regexp.Regexp
			for _, line := range strings.Split(string(src), "\n") {
				if _, w, ok := strings.Cut(line, "# want: "); ok {
					wants = append(wants, regexp.MustCompile(w))
				}
			}
			_, err = Load(f)
			if len(wants) == 0 {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load succeeded, want %d errors", len(wants))
			}
			got := strings.Split(err.Error(), "\n")
			if len(got) != len(wants) {
				t.Errorf("got %d errors, want %d:\n%s", len(got), len(wants), err)
			}
			for _, w := range wants {
				found := false
				for _, g := range got {
					found = found || w.MatchString(g)
				}
				if !found {
					t.Errorf("no error matches %q in:\n%s", w, err)
				}
			}
		})
	}
}

// TestLoadGood checks what Load makes of every attribute and block.
func TestLoadGood(t *testing.T) {
	cfg, err := Load(filepath.Join("testdata", "load", "good.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sandbox != "auto" || cfg.EnvdirRoot != "env" || len(cfg.EnvAllowlist) != 1 || cfg.EnvAllowlist[0] != "PATH" {
		t.Errorf("top level: %q %q %q", cfg.Sandbox, cfg.EnvdirRoot, cfg.EnvAllowlist)
	}
	if len(cfg.Tools) != 2 {
		t.Fatalf("tools: %d, want ok and more (notes.sh is not executable)", len(cfg.Tools))
	}
	ok, more := cfg.Tools[0], cfg.Tools[1]
	if ok.Name != "ok" || ok.Timeout != 30*time.Second || ok.AllowRunAs || ok.Kind != KindExec {
		t.Errorf("tool ok: %+v", ok)
	}
	if more.Name != "more" || !more.AllowRunAs || !strings.HasSuffix(more.Path, "more.sh") {
		t.Errorf("tools source: %+v", more)
	}
	if len(cfg.Notes) != 1 || !strings.Contains(cfg.Notes[0], "notes.sh is not an executable file") {
		t.Errorf("notes: %q, want the non-executable notes.sh named", cfg.Notes)
	}
	c := cfg.Capabilities[0]
	if c.Name != "c" || !c.Required || c.Description != "d" || strings.Join(c.Backends, ",") != "ok,more" {
		t.Errorf("capability: %+v", c)
	}
	if strings.Join(cfg.Builtins, ",") != "process" {
		t.Errorf("builtins: %q", cfg.Builtins)
	}
	if p := cfg.Process; p == nil || p.Unconfined || p.Sandbox == nil || p.Sandbox.Net != "none" || p.Sandbox.Tmp != "shared" ||
		strings.Join(p.Sandbox.FS.Read, ",") != "../tools" || strings.Join(p.Sandbox.FS.Write, ",") != "." {
		t.Errorf("builtin process: %+v", p)
	}
}

// FuzzLoad: Load never panics, and either returns a config or
// diagnostics that each carry a message. Seeds are the fixtures and
// testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "load", "*.hcl"))
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil {
			f.Add(src)
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		p := filepath.Join(dir, "toolbox.hcl")
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(p)
		if err == nil {
			if cfg == nil {
				t.Fatal("nil config without error")
			}
			return
		}
		ds, ok := err.(Diagnostics)
		if !ok || len(ds) == 0 {
			t.Fatalf("error is not Diagnostics: %T %v", err, err)
		}
		for _, d := range ds {
			if d.Msg == "" {
				t.Fatalf("diagnostic without message: %+v", d)
			}
		}
	})
}
