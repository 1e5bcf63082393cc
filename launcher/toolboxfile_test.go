package launcher

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/locktest"
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
	if err := VerifyToolboxFile(f.LockPath, f.Lock); !errors.Is(err, ErrNeedsConfigParser) || !ToolboxFileBytesChanged(f.LockPath, f.Lock) {
		t.Errorf("without a parser: %v, want ErrNeedsConfigParser", err)
	}
}
