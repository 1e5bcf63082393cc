package sandbox

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var allMechanisms = []Mechanism{None, Bwrap, Landlock}

func requireAny(t *testing.T, m Mechanism) {
	t.Helper()
	if m != None {
		requireMechanism(t, m)
	}
}

// copyFile copies src to dst with mode.
func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	must(t, err)
	_, err = io.Copy(out, in)
	must(t, err)
	must(t, out.Close())
}

// swapIn replaces path by a new file holding content, by rename (what an
// attacker with write access to the directory does).
func swapIn(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".swap"
	must(t, os.WriteFile(tmp, []byte(content), 0o755))
	must(t, os.Rename(tmp, path))
}

func runExe(t *testing.T, spec *Spec, c Command) (result, error) {
	t.Helper()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	c.Env = append(c.Env, "PATH=/usr/bin:/bin")
	p, err := Start(spec, c)
	if err != nil {
		return result{}, err
	}
	code, err := p.Wait()
	must(t, err)
	return result{code: code, stdout: out.String(), stderr: errb.String()}, nil
}

// Issue 10 #9: the binary was hashed by path, then executed by path; a
// swap in between ran the swapped binary. Now the descriptor that was
// hashed is what runs: the swap is made deterministic by doing it between
// OpenExecutable and Start. Under None and Landlock an ELF binary runs
// from its descriptor; a script is run by its name again, so a swapped
// one is refused. bwrap binds the checked file at the tool's path, which
// it cannot do once the file is unlinked: a swap is refused there too.
// "none-wrapper" is None with limits in a program that never called Init,
// where the limits wrapper alone starts the tool (noneCmd): it executed
// the tool by its path again until it was given the descriptor too.
func TestSwappedBinaryDoesNotRun(t *testing.T) {
	echo, err := filepath.EvalSymlinks("/bin/echo")
	must(t, err)
	type variant struct {
		name   string
		m      Mechanism
		noInit bool
	}
	var variants []variant
	for _, m := range allMechanisms {
		variants = append(variants, variant{string(m), m, false})
	}
	variants = append(variants, variant{"none-wrapper", None, true})
	specFor := func(t *testing.T, v variant, toolDir string) *Spec {
		if !v.noInit {
			return pin(&Spec{Mechanism: v.m, ToolDir: toolDir})
		}
		initDone.Store(false)
		t.Cleanup(func() { initDone.Store(true) })
		return &Spec{Mechanism: None, ToolDir: toolDir, Limits: Limits{FileSize: mib}}
	}
	for _, v := range variants {
		m := v.m
		t.Run(v.name+"/elf", func(t *testing.T) {
			requireAny(t, m)
			tr := newTree(t)
			tool := tr.Tool + "/tool"
			copyFile(t, echo, tool, 0o755)
			exe, err := OpenExecutable(tool)
			must(t, err)
			defer exe.Close()
			swapIn(t, tool, "#!/bin/sh\necho swapped\n")
			r, err := runExe(t, specFor(t, v, tr.Tool), Command{Path: tool, Args: []string{"checked"}, Exe: exe})
			switch {
			case m == Bwrap && (err == nil || !strings.Contains(err.Error(), "replaced after its check")):
				t.Fatalf("bwrap: ran %q (stderr %q), error %v; want a refusal", r.stdout, r.stderr, err)
			case m != Bwrap && (err != nil || r.stdout != "checked\n"):
				t.Fatalf("ran %q (stderr %q, %v), want the checked binary", r.stdout, r.stderr, err)
			}
		})
		t.Run(v.name+"/script", func(t *testing.T) {
			requireAny(t, m)
			tr := newTree(t)
			spec := specFor(t, v, tr.Tool)
			tool := tr.Tool + "/tool"
			must(t, os.WriteFile(tool, []byte("#!/bin/sh\necho checked \"$0\"\n"), 0o755))
			exe, err := OpenExecutable(tool)
			must(t, err)
			defer exe.Close()
			// The twin first: unswapped, the script runs, and sees its own
			// path as $0 (scripts find their files next to it).
			r, err := runExe(t, spec, Command{Path: tool, Exe: exe})
			if err != nil || r.stdout != "checked "+tool+"\n" {
				t.Fatalf("unswapped: %q (stderr %q, %v)", r.stdout, r.stderr, err)
			}
			swapIn(t, tool, "#!/bin/sh\necho swapped\n")
			r, err = runExe(t, spec, Command{Path: tool, Exe: exe})
			switch {
			case err == nil:
				t.Fatalf("a swapped script ran: %q", r.stdout)
			case !strings.Contains(err.Error(), "replaced after its check"):
				t.Fatalf("error %v does not say the script was replaced", err)
			}
		})
	}
}

// A script run by its name again (None, Landlock) is refused when a user
// other than root or toolbox's could rename another file into its place;
// bwrap runs the checked file itself and does not care. Twin: the same
// script in a directory only its owner writes runs everywhere.
func TestScriptInWritableDirectory(t *testing.T) {
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireAny(t, m)
			tr := newTree(t)
			tool := tr.Work + "/tool" // Work is mode 0777
			must(t, os.WriteFile(tool, []byte("#!/bin/sh\necho ok\n"), 0o755))
			exe, err := OpenExecutable(tool)
			must(t, err)
			defer exe.Close()
			spec := pin(&Spec{Mechanism: m, ToolDir: tr.Work})
			r, err := runExe(t, spec, Command{Path: tool, Exe: exe})
			if m == Bwrap {
				if err != nil || r.stdout != "ok\n" {
					t.Fatalf("bwrap: %q, %v", r.stdout, err)
				}
			} else if rf := wantRefusal(t, err, FieldPath); !strings.Contains(rf.Reason, tr.Work) {
				t.Fatalf("reason %q does not name the directory", rf.Reason)
			}
			must(t, os.Chmod(tr.Work, 0o755))
			r, err = runExe(t, spec, Command{Path: tool, Exe: exe})
			if err != nil || r.stdout != "ok\n" {
				t.Fatalf("owner-only directory: %q, %v", r.stdout, err)
			}
		})
	}
}

// A binary others may rewrite in place is refused at open: its content
// could change between the hash and the start. Twin: 0755 opens.
func TestWritableBinaryIsRefused(t *testing.T) {
	tr := newTree(t)
	tool := tr.Tool + "/tool"
	must(t, os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Chmod(tool, 0o757))
	_, err := OpenExecutable(tool)
	if r := wantRefusal(t, err, FieldPath); !strings.Contains(r.Reason, "every user") {
		t.Fatalf("reason %q", r.Reason)
	}
	must(t, os.Chmod(tool, 0o755))
	exe, err := OpenExecutable(tool)
	must(t, err)
	exe.Close()
	if _, err := OpenExecutable(tr.Tool + "/missing"); !errors.Is(err, os.ErrNotExist) || !errors.Is(err, ErrStartFailed) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := OpenExecutable(tr.In + "/a.txt"); !errors.Is(err, ErrStartFailed) {
		t.Fatalf("not executable: %v", err)
	}
}

// The descriptor executed under None does not leak into the tool.
func TestExecutedDescriptorNotInherited(t *testing.T) {
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireAny(t, m)
			tr := newTree(t)
			ls, err := filepath.EvalSymlinks("/bin/ls")
			must(t, err)
			tool := tr.Tool + "/ls"
			copyFile(t, ls, tool, 0o755)
			exe, err := OpenExecutable(tool)
			must(t, err)
			defer exe.Close()
			r, err := runExe(t, pin(&Spec{Mechanism: m, ToolDir: tr.Tool}), Command{Path: tool, Args: []string{"/dev/fd/"}, Exe: exe})
			must(t, err)
			if m == Landlock {
				return // no /proc, hence no /dev/fd listing: nothing to see
			}
			if got := strings.Fields(r.stdout); len(got) > 4 {
				t.Fatalf("the tool holds descriptors %q (stderr %q)", got, r.stderr)
			}
		})
	}
}

// The window left under bwrap, between the check that the path still
// names the checked file and bwrap's bind, fails closed: bwrap cannot
// bind the unlinked file, and the swapped one never runs. Cmd returns the
// command unstarted, which makes the window deterministic.
func TestSwapAfterCheckFailsUnderBwrap(t *testing.T) {
	requireMechanism(t, Bwrap)
	tr := newTree(t)
	tool := tr.Tool + "/tool"
	must(t, os.WriteFile(tool, []byte("#!/bin/sh\necho checked\n"), 0o755))
	exe, err := OpenExecutable(tool)
	must(t, err)
	defer exe.Close()
	cmd, release, err := Cmd(pin(&Spec{Mechanism: Bwrap, ToolDir: tr.Tool}), Command{Path: tool, Exe: exe, Env: []string{"PATH=/usr/bin:/bin"}})
	must(t, err)
	defer release()
	swapIn(t, tool, "#!/bin/sh\necho swapped\n")
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "swapped") {
		t.Fatalf("after a swap bwrap ran: %q, %v", out, err)
	}
}

// The checked descriptor is still what runs once the child has switched to
// run_as (a process that changed its uid may only reach its own
// /proc/self/fd): an ELF binary and a script, under every mechanism.
func TestExecFromDescriptorAsNobody(t *testing.T) {
	requireRoot(t)
	id, err := filepath.EvalSymlinks("/usr/bin/id")
	must(t, err)
	nobody := &Identity{UID: 65534, GID: 65534, Groups: []uint32{65534}}
	for _, m := range allMechanisms {
		t.Run(string(m), func(t *testing.T) {
			requireAny(t, m)
			tr := newTree(t)
			copyFile(t, id, tr.Tool+"/id", 0o755)
			must(t, os.WriteFile(tr.Tool+"/script", []byte("#!/bin/sh\nid -u\n"), 0o755))
			for _, name := range []string{"id", "script"} {
				exe, err := OpenExecutable(tr.Tool + "/" + name)
				must(t, err)
				args := []string{}
				if name == "id" {
					args = []string{"-u"}
				}
				r, err := runExe(t, pin(&Spec{Mechanism: m, ToolDir: tr.Tool, RunAs: nobody}), Command{Path: tr.Tool + "/" + name, Args: args, Exe: exe})
				exe.Close()
				if err != nil || r.stdout != "65534\n" {
					t.Fatalf("%s: %q (stderr %q), %v", name, r.stdout, r.stderr, err)
				}
			}
		})
	}
}

// The limits wrapper without Init reports a failed exec as the helper
// does: ErrStartFailed, the errno, and the tool's path (not once per
// layer).
func TestLimitsWrapperReportsExecFailure(t *testing.T) {
	initDone.Store(false)
	defer initDone.Store(true)
	tool := filepath.Join(t.TempDir(), "tool")
	must(t, os.WriteFile(tool, []byte("\x00\x01 not a program"), 0o755))
	_, err := runExe(t, &Spec{Limits: Limits{FileSize: mib}}, Command{Path: tool})
	if !errors.Is(err, ErrStartFailed) || !errors.Is(err, syscall.ENOEXEC) || strings.Count(err.Error(), tool) != 1 {
		t.Fatalf("got %v, want ErrStartFailed and ENOEXEC naming %s once", err, tool)
	}
}
