package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run_as tool whose binary or working directory its user cannot reach (a
// directory on the way it may not search: a private TMPDIR, root's 0700
// home) is refused before launch, naming the directory, the user and the
// fix, instead of failing inside bwrap ("Can't find source path ...:
// Permission denied") or the helper (errno 13). Twin: the same tool in a
// directory open to all runs as nobody.
func TestRunAsUnreachableIsRefused(t *testing.T) {
	top := openTop(t)
	open := filepath.Join(top, "open")
	private := filepath.Join(top, "private")
	must(t, os.Mkdir(open, 0o755))
	must(t, os.Mkdir(private, 0o700))
	for _, d := range []string{open, private} {
		copyFile(t, truePath(t), filepath.Join(d, "true"), 0o755)
	}
	nobody := &Identity{UID: 65534, GID: 65534, Groups: []uint32{65534}}
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			start := func(dir, bin, wd string) error {
				spec := pin(&Spec{Mechanism: m, RunAs: nobody, ToolDir: dir})
				if m == None {
					spec.ToolDir = ""
				}
				c := Command{Path: filepath.Join(dir, bin), Dir: wd}
				if m != None {
					// From its checked descriptor, as the launcher runs
					// it: bwrap and the helper still walk the path.
					exe, err := OpenExecutable(c.Path)
					must(t, err)
					defer exe.Close()
					c.Exe = exe
				}
				p, err := Start(spec, c)
				if err != nil {
					return err
				}
				if code, err := p.Wait(); err != nil || code != 0 {
					t.Errorf("%s as nobody: exit %d, %v", filepath.Join(dir, bin), code, err)
				}
				return nil
			}
			if err := start(open, "true", open); err != nil {
				t.Fatalf("a binary nobody can reach: %v", err)
			}
			for _, tc := range []struct{ name, dir, wd string }{
				{"binary", private, ""},
				{"working directory", open, private},
			} {
				err := start(tc.dir, "true", tc.wd)
				if tc.wd != "" && m == Bwrap {
					// bwrap wants the working directory granted: the
					// grant's own check names it first.
					spec := pin(&Spec{Mechanism: m, RunAs: nobody, ToolDir: open, Read: []string{private}})
					_, err = Start(spec, Command{Path: filepath.Join(open, "true"), Dir: private})
				}
				r := wantRefusal(t, err, FieldRunAs)
				if !strings.Contains(r.Error(), private) || !strings.Contains(r.Error(), "uid 65534") || !strings.Contains(r.Fix, "chmod o+x "+private) {
					t.Errorf("%s in a private directory: %v (fix %q); want the directory, the user and the fix named", tc.name, r, r.Fix)
				}
			}
		})
	}
}

// A symlink in a directory open to all, pointing into one the run_as user
// cannot search, is refused like the private directory itself: os.Stat of
// the link shows its target's open mode, but the kernel walks the
// target's directories too (and would fail with a bare errno 13). Twin: a
// link to an open directory runs.
func TestRunAsUnreachableThroughSymlinkIsRefused(t *testing.T) {
	top := openTop(t)
	private := filepath.Join(top, "private")
	hidden := filepath.Join(private, "bin")
	open := filepath.Join(top, "open")
	for _, d := range []string{private, hidden, open} {
		must(t, os.Mkdir(d, 0o755))
	}
	must(t, os.Chmod(private, 0o700))
	copyFile(t, truePath(t), filepath.Join(hidden, "true"), 0o755)
	copyFile(t, truePath(t), filepath.Join(open, "true"), 0o755)
	links := filepath.Join(top, "links")
	must(t, os.Mkdir(links, 0o755))
	must(t, os.Symlink(hidden, filepath.Join(links, "private")))
	must(t, os.Symlink(open, filepath.Join(links, "open")))
	// The binary itself a link, in a directory open to all.
	must(t, os.Symlink(filepath.Join(hidden, "true"), filepath.Join(open, "linked")))
	nobody := &Identity{UID: 65534, GID: 65534, Groups: []uint32{65534}}
	for _, m := range []Mechanism{None, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			start := func(dir string, name ...string) error {
				bin := "true"
				if len(name) > 0 {
					bin = name[0]
				}
				spec := pin(&Spec{Mechanism: m, RunAs: nobody})
				if m != None {
					spec.ToolDir = dir
				}
				p, err := Start(spec, Command{Path: filepath.Join(dir, bin)})
				if err != nil {
					return err
				}
				if code, err := p.Wait(); err != nil || code != 0 {
					t.Errorf("%s as nobody: exit %d, %v", dir, code, err)
				}
				return nil
			}
			if err := start(filepath.Join(links, "open")); err != nil {
				t.Fatalf("through a link to an open directory: %v", err)
			}
			for what, err := range map[string]error{
				"through a link into a private directory":      start(filepath.Join(links, "private")),
				"a binary that links into a private directory": start(open, "linked"),
			} {
				r := wantRefusal(t, err, FieldRunAs)
				if !strings.Contains(r.Error(), private) || !strings.Contains(r.Fix, "chmod o+x "+private) {
					t.Errorf("%s: %v (fix %q); want %s named", what, r, r.Fix, private)
				}
			}
		})
	}
}

// openTop is a fresh directory (mode 0755, as its parent) that any user
// may search, nobody included: the
// run_as tests make their private directories inside it. It needs root.
func openTop(t *testing.T) string {
	requireRoot(t)
	top := t.TempDir()
	must(t, os.Chmod(filepath.Dir(top), 0o755))
	must(t, os.Chmod(top, 0o755))
	return top
}
