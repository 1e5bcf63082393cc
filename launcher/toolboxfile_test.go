package launcher

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/manifest"
)

// TestVerifyToolboxFile: equal bytes pass without parsing; other bytes pass
// when their configuration digest is the locked one (a comment, toolbox
// fmt), are refused when it differs or the file no longer loads, and need
// the parser (ErrNeedsConfigParser) when ConfigDigest is nil.
func TestVerifyToolboxFile(t *testing.T) {
	f := newFixture(t)
	hcl := filepath.Join(f.Dir, "toolbox.hcl")
	digests := map[string]string{}
	calls := 0
	defer func(old func(string) (string, error)) { ConfigDigest = old }(ConfigDigest)
	ConfigDigest = func(path string) (string, error) {
		calls++
		d, ok := digests[path]
		if !ok {
			return "", errors.New("toolbox.hcl:1:1: does not parse")
		}
		return d, nil
	}

	if err := VerifyToolboxFile(f.LockPath, f.Lock); err != nil || calls != 0 {
		t.Fatalf("unchanged bytes: %v (%d digests computed, want 0)", err, calls)
	}
	locktest.WriteFile(t, hcl, "# a comment\n", 0o644)
	digests[hcl] = f.Lock.File.Config
	if err := VerifyToolboxFile(f.LockPath, f.Lock); err != nil {
		t.Errorf("same configuration, other bytes: %v", err)
	}
	digests[hcl] = strings.Repeat("9", 64)
	err := VerifyToolboxFile(f.LockPath, f.Lock)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `toolbox file "toolbox.hcl" changed (configuration sha256 999999999999, locked `) || !strings.Contains(err.Error(), "toolbox lock") {
		t.Errorf("other configuration: %v", err)
	}
	delete(digests, hcl)
	if err := VerifyToolboxFile(f.LockPath, f.Lock); err == nil || !strings.Contains(err.Error(), "changed and does not load (toolbox.hcl:1:1: does not parse)") {
		t.Errorf("a file that does not load: %v", err)
	}
	ConfigDigest = nil
	if err := VerifyToolboxFile(f.LockPath, f.Lock); !errors.Is(err, ErrNeedsConfigParser) || !CheckToolboxFile(f.LockPath, f.Lock).BytesChanged() {
		t.Errorf("without a parser: %v, want ErrNeedsConfigParser", err)
	}
}

// A call hashes its toolbox file once: not again before each backend a
// capability with fallback_on tries, nor when the caller checked it
// already (the toolbox binary does, before reading the input); a check
// made for another lock is not taken for this one's.
func TestRunHashesTheToolboxFileOnce(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"a", "b", "c"} {
		f.AddTool(t, name, "exit 3", nil)
	}
	f.Lock.Capabilities["cap"] = &manifest.Capability{Backends: []string{"a", "b", "c"}, Active: "a", FallbackOn: []int{3}}
	hcl := filepath.Join(f.Dir, "toolbox.hcl")
	hashes := 0
	defer func(old func(string) (string, error)) { hashFile = old }(hashFile)
	hashFile = func(path string) (string, error) {
		if abs, _ := filepath.Abs(path); abs == hcl {
			hashes++
		}
		return manifest.HashFile(path)
	}
	run := func(req Request) *Result {
		t.Helper()
		res, err := Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	if res := run(f.request("cap", nil)); !slices.Equal(res.Tried, []string{"a", "b", "c"}) || hashes != 1 {
		t.Errorf("three backends tried (%q): the toolbox file hashed %d times, want 1", res.Tried, hashes)
	}
	hashes = 0
	run(f.request("a", nil))
	if hashes != 1 {
		t.Errorf("one tool: hashed %d times, want 1", hashes)
	}

	hashes = 0
	req := f.request("cap", nil)
	req.ToolboxFile = CheckToolboxFile(filepath.Join(f.Dir, ".", "toolbox.lock.json"), f.Lock) // spelt another way
	if req.ToolboxFile.BytesChanged() {
		t.Fatal("the toolbox file's bytes are the locked ones")
	}
	run(req)
	if hashes != 1 {
		t.Errorf("with the caller's check: hashed %d times in all, want 1 (the caller's)", hashes)
	}

	// Another lock (a copy): its own check.
	hashes = 0
	other := *f.Lock
	req.Lock = &other
	run(req)
	if hashes != 1 {
		t.Errorf("a check for another lock: Run hashed %d times, want 1 (its own check)", hashes)
	}
}
