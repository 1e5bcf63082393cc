package launcher

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/locktest"
	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// swapAfterVerify makes the race of issue 10 #9 deterministic: between
// the check of the binary and its start, the file at its path is replaced
// (by rename, as an attacker with write access to the directory would).
func swapAfterVerify(t *testing.T, content string) {
	t.Helper()
	afterVerify = func(path string) {
		tmp := path + ".swap"
		locktest.WriteFile(t, tmp, content, 0o755)
		if err := os.Rename(tmp, path); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterVerify = nil })
}

// Issue 10 #9: the binary was hashed by path and then executed by path; a
// swap in between ran the swapped file (3 times in 60). Now the checked
// descriptor is what runs: an ELF binary runs from it; a script, which
// its interpreter reads again by name, is refused when it was swapped.
// The unswapped runs are the twins.
func TestSwapBetweenVerifyAndStart(t *testing.T) {
	echo, err := filepath.EvalSymlinks("/bin/echo")
	if err != nil {
		t.Skip("no /bin/echo")
	}
	t.Run("elf", func(t *testing.T) {
		f := newFixture(t)
		f.AddTool(t, "elf", "", nil)
		copyInto(t, echo, filepath.Join(f.Dir, "tools", "elf"))
		f.Lock.Tools["elf"].SHA256 = locktest.SHA256File(t, filepath.Join(f.Dir, "tools", "elf"))
		res, err := Run(context.Background(), f.request("elf", nil))
		if err != nil || string(res.Output) != "run\n" {
			t.Fatalf("twin: %v, %q", err, outputOf(res))
		}
		swapAfterVerify(t, "#!/bin/sh\necho swapped\n")
		res, err = Run(context.Background(), f.request("elf", nil))
		if err != nil || string(res.Output) != "run\n" {
			t.Fatalf("after a swap: %v, ran %q; want the checked binary", err, outputOf(res))
		}
	})
	mechs := []sandbox.Mechanism{sandbox.None, sandbox.Bwrap, sandbox.Landlock}
	for _, m := range mechs {
		t.Run("script/"+string(m), func(t *testing.T) {
			f := newFixture(t)
			var d *protocol.Describe
			if m != sandbox.None {
				s := sandbox.Detect()
				ok, why := s.Landlock, s.LandlockReason
				if m == sandbox.Bwrap {
					ok, why = s.Bwrap, s.BwrapReason
					f.Lock.Bwrap = &manifest.Pin{Path: s.BwrapPin.Path, SHA256: s.BwrapPin.SHA256}
				}
				testenv.Need(t, ok, string(m), why)
				d = &protocol.Describe{Protocol: 2, Slug: "s", Description: "s", Args: []protocol.Arg{},
					Process: &protocol.Process{Output: &protocol.Output{Framing: "chunks"}},
					Runtime: &protocol.Runtime{Sandbox: &protocol.Sandbox{}}}
			}
			tl := f.AddTool(t, "s", `echo checked`, d)
			tl.Runtime.Mechanism = string(m)
			res, err := Run(context.Background(), f.request("s", nil))
			if err != nil || string(res.Output) != "checked\n" {
				t.Fatalf("twin: %v, %q", err, outputOf(res))
			}
			swapAfterVerify(t, "#!/bin/sh\necho swapped\n")
			res, err = Run(context.Background(), f.request("s", nil))
			if err == nil || res != nil || !strings.Contains(err.Error(), "replaced after its check") {
				t.Fatalf("after a swap: %v, ran %q; want a refusal", err, outputOf(res))
			}
			if ExitCode(err) != ExitFailed {
				t.Errorf("exit code %d, want %d", ExitCode(err), ExitFailed)
			}
		})
	}
}

func copyInto(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func outputOf(r *Result) string {
	if r == nil {
		return ""
	}
	return string(r.Output)
}
