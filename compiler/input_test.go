package compiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deepShapes build an expression nested n deep in each way HCL's parser
// recurses.
var deepShapes = map[string]func(n int) string{
	"parentheses":    func(n int) string { return "x = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) },
	"brackets":       func(n int) string { return "x = " + strings.Repeat("[", n) + strings.Repeat("]", n) },
	"objects":        func(n int) string { return "x = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) },
	"interpolations": func(n int) string { return "x = " + strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n) },
	"not":            func(n int) string { return "x = " + strings.Repeat("!", n) + "true" },
	"minus":          func(n int) string { return "x = " + strings.Repeat("-", n) + "1" },
	"directives": func(n int) string {
		return `x = "` + strings.Repeat("%{if true}", n) + strings.Repeat("%{endif}", n) + `"`
	},
	"blocks": func(n int) string { return strings.Repeat("b {\n", n) + strings.Repeat("}\n", n) },
}

// deepest is shape nested as deep as fits in a toolbox file, at most
// 100,000 levels (parentheses 100,000 deep crashed the parser).
func deepest(shape func(int) string) string {
	n := 100_000
	if l := len(shape(n)); l > MaxToolboxFileBytes-100 {
		n = n * (MaxToolboxFileBytes - 100) / l
	}
	return shape(n)
}

func writeHCL(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolbox.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDeepNestingRefused: an expression nested 100,000 deep (which
// overflowed the Go stack inside HCL's parser and killed lock, check and
// fmt; a toolbox file of 256 KiB can still nest 100,000 deep) is refused
// by Load and Format before it is parsed, at the line and
// column where it passes MaxNestingDepth. The positive twin: the same
// shapes nested MaxNestingDepth-1 deep pass the check.
func TestDeepNestingRefused(t *testing.T) {
	for name, shape := range deepShapes {
		t.Run(name, func(t *testing.T) {
			src := "sandbox = \"none\"\n" + deepest(shape) + "\n"
			path := writeHCL(t, src)
			_, err := Load(path)
			want := fmt.Sprintf("nesting deeper than %d levels", MaxNestingDepth)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path+":") {
				t.Fatalf("Load = %v, want %q at %s:LINE:COL", err, want, path)
			}
			var ds Diagnostics
			if !errors.As(err, &ds) || ds[0].Line < 2 || ds[0].Col < 1 {
				t.Errorf("diagnostic has no position: %#v", ds)
			}
			if _, err := Format([]byte(src), path); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Format = %v, want %q", err, want)
			}
			// A run whose toolbox file's bytes changed digests it
			// (launcher.ConfigDigest): the same refusal, not a crash.
			if _, err := ConfigDigestFile(path); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ConfigDigestFile = %v, want %q", err, want)
			}
		})
	}
	for name, shape := range deepShapes {
		// Each level of a string interpolation opens two (a quote and ${).
		if ds := checkShape([]byte(shape(MaxNestingDepth/2)+"\n"), "ok.hcl"); ds != nil {
			t.Errorf("%s nested %d deep refused: %v", name, MaxNestingDepth/2, ds)
		}
	}
}

// TestNestingColumn: the diagnostic points at the token that opens level
// MaxNestingDepth+1.
func TestNestingColumn(t *testing.T) {
	src := "x = " + strings.Repeat("(", MaxNestingDepth+1) + "1" + strings.Repeat(")", MaxNestingDepth+1) + "\n"
	ds := checkShape([]byte(src), "f.hcl")
	if len(ds) != 1 || ds[0].Line != 1 || ds[0].Col != 5+MaxNestingDepth {
		t.Fatalf("checkShape = %v, want f.hcl:1:%d", ds, 5+MaxNestingDepth)
	}
}

// TestHeredocBudget: heredocs of more than MaxHeredocLines lines in all
// (80,000 lines took 15 s to parse) are refused at the first line over;
// a heredoc of MaxHeredocLines lines is parsed, and how long that takes is
// logged as the measured bound.
func TestHeredocBudget(t *testing.T) {
	heredoc := func(lines int) string {
		return "sandbox = \"none\"\nx = <<EOT\n" + strings.Repeat("line\n", lines) + "EOT\n"
	}
	start := time.Now()
	_, err := Format([]byte(heredoc(80_000)), "big.hcl")
	want := fmt.Sprintf("big.hcl:%d:1: heredocs longer than %d lines in all", 3+MaxHeredocLines, MaxHeredocLines)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Format of an 80,000-line heredoc = %v, want %q", err, want)
	}
	t.Logf("refused in %s", time.Since(start))
	two := "x = <<A\n" + strings.Repeat("l\n", MaxHeredocLines/2) + "A\ny = <<B\n" + strings.Repeat("l\n", MaxHeredocLines/2+1) + "B\n"
	if _, err := Format([]byte(two), "two.hcl"); err == nil || !strings.Contains(err.Error(), "heredocs longer than") {
		t.Errorf("two heredocs over the budget together: %v", err)
	}
	interp := "x = <<EOT\n" + strings.Repeat("${1}", MaxHeredocLines+1) + "\nEOT\n"
	if _, err := Format([]byte(interp), "i.hcl"); err == nil || !strings.Contains(err.Error(), "heredocs longer than") {
		t.Errorf("a heredoc of many interpolations: %v", err)
	}
	start = time.Now()
	if _, err := Format([]byte(heredoc(MaxHeredocLines-1)), "ok.hcl"); err != nil {
		t.Fatalf("a heredoc within the budget: %v", err)
	}
	t.Logf("a heredoc of %d lines parsed and formatted in %s", MaxHeredocLines-1, time.Since(start))
}

// TestToolboxFileNotRegularOrTooBig: lock, check and fmt read the toolbox
// file with ReadToolboxFile: /dev/zero (which grew lock by 1 GB/s), a FIFO
// (which hung it) and a file over MaxToolboxFileBytes are refused at once
// with the file named and the fix; a file at the limit is read.
func TestToolboxFileNotRegularOrTooBig(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.hcl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.hcl")
	if err := os.WriteFile(big, []byte(strings.Repeat("#", MaxToolboxFileBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "a character device: not a regular file; name a regular file",
		fifo:        "a FIFO: not a regular file; name a regular file",
		big:         fmt.Sprintf("is %d bytes, more than the %d bytes toolbox reads", MaxToolboxFileBytes+1, MaxToolboxFileBytes),
	} {
		done := make(chan error, 1)
		for fn, read := range map[string]func(string) error{
			"Load":             func(p string) error { _, err := Load(p); return err },
			"ConfigDigestFile": func(p string) error { _, err := ConfigDigestFile(p); return err },
		} {
			go func() { done <- read(path) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), path+": ") {
					t.Errorf("%s(%q) = %v, want %q", fn, path, err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s(%q) still reading after 10 s", fn, path)
			}
		}
	}
	atLimit := filepath.Join(dir, "limit.hcl")
	if err := os.WriteFile(atLimit, []byte(strings.Repeat("#", MaxToolboxFileBytes-1)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadToolboxFile(atLimit); err != nil {
		t.Errorf("a file of exactly %d bytes: %v", MaxToolboxFileBytes, err)
	}
	if _, err := ConfigDigestFile(atLimit); err != nil {
		t.Errorf("digest of a file of exactly %d bytes: %v", MaxToolboxFileBytes, err)
	}
}
