package launcher

import (
	"errors"
	"github.com/toolbox-dev/toolbox/internal/locktest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(t *testing.T, f *fixture)
		wantErr  string // substring; "" = verified
		notFound bool
	}{
		{name: "unchanged"},
		{
			name: "binary swapped",
			mutate: func(t *testing.T, f *fixture) {
				writeScript(t, filepath.Join(f.Dir, "tools"), "echo", "echo evil")
			},
			wantErr: `binary "tools/echo" of tool "echo" changed (sha256 `,
		},
		{
			name: "binary removed",
			mutate: func(t *testing.T, f *fixture) {
				if err := os.Remove(filepath.Join(f.Dir, "tools", "echo")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr:  `binary "tools/echo" of tool "echo" was removed since the lock`,
			notFound: true,
		},
		{
			name: "toolbox file edited",
			mutate: func(t *testing.T, f *fixture) {
				locktest.WriteFile(t, filepath.Join(f.Dir, "toolbox.hcl"), "sandbox = \"auto\"\n", 0o644)
			},
			// Without ConfigDigest (the toolbox binary), other bytes are
			// refused: toolbox-core decides (TestVerifyToolboxFile).
			wantErr: `toolbox file "toolbox.hcl" changed since the lock`,
		},
		{
			name: "toolbox file removed",
			mutate: func(t *testing.T, f *fixture) {
				if err := os.Remove(filepath.Join(f.Dir, "toolbox.hcl")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: `toolbox file "toolbox.hcl" was removed since the lock`,
		},
		{
			name:    "other platform",
			mutate:  func(t *testing.T, f *fixture) { f.Lock.Tools["echo"].Platform = "plan9/mips" },
			wantErr: `tool "echo" was locked on "plan9/mips", this is `,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.AddTool(t, "echo", "echo hi", nil)
			if tt.mutate != nil {
				tt.mutate(t, f)
			}
			err := Verify(f.LockPath, f.Lock, "echo")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			var r *RefusedError
			if !errors.As(err, &r) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Verify error = %v, want a *RefusedError containing %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "`toolbox lock`") {
				t.Errorf("error %q does not name the fix", err)
			}
			if got := errors.Is(err, ErrNotFound); got != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", got, tt.notFound)
			}
			// Refused through Run too, before anything runs.
			res, err := Run(t.Context(), f.request("echo", nil))
			if res != nil || !errors.As(err, &r) {
				t.Errorf("Run = %v, %v; want a refusal", res, err)
			}
		})
	}
}

func TestVerifyUnknownTool(t *testing.T) {
	f := newFixture(t)
	if err := Verify(f.LockPath, f.Lock, "ghost"); !errors.Is(err, ErrUnknownName) {
		t.Fatalf("Verify(ghost) = %v, want ErrUnknownName", err)
	}
}
