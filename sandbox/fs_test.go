package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Reading: declared paths yes, anything else no.
func TestReadOutsideDeclaredPathsIsDenied(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			r := runSh(t, tr.spec(m), `cat "$OUT/secret.txt"`, tr.env()...)
			if r.code == 0 || strings.Contains(r.stdout, "secret") {
				t.Fatalf("read outside the declared paths: exit %d, stdout %q", r.code, r.stdout)
			}
			r = runSh(t, tr.spec(m), `ls "$OUT"`, tr.env()...)
			if r.code == 0 || strings.Contains(r.stdout, "secret") {
				t.Fatalf("listed a directory outside the declared paths: exit %d, stdout %q", r.code, r.stdout)
			}
			// Positive twin: the declared path and the system are readable.
			r = runSh(t, tr.spec(m), `cat "$IN/a.txt" && ls "$IN" && id -u`, tr.env()...)
			if r.code != 0 || !strings.Contains(r.stdout, "inside") || !strings.Contains(r.stdout, "a.txt") {
				t.Fatalf("read inside: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// Writing: only below Write paths; Read paths are read-only.
func TestWriteOutsideWritablePathsIsDenied(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			r := runSh(t, tr.spec(m), `echo x > "$OUT/new"; echo x > "$IN/new"; mkdir "$IN/d"; rm "$IN/a.txt"`, tr.env()...)
			for _, p := range []string{tr.Out + "/new", tr.In + "/new", tr.In + "/d"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("the tool created %s (stderr %q)", p, r.stderr)
				}
			}
			if _, err := os.Stat(tr.In + "/a.txt"); err != nil {
				t.Errorf("the tool removed a read-only file: %v", err)
			}
			// Positive twin.
			r = runSh(t, tr.spec(m), `echo made > "$WORK/new" && mkdir "$WORK/d" && rm "$WORK/b.txt"`, tr.env()...)
			if r.code != 0 {
				t.Fatalf("write inside: exit %d, stderr %q", r.code, r.stderr)
			}
			if b, err := os.ReadFile(tr.Work + "/new"); err != nil || string(b) != "made\n" {
				t.Fatalf("written file: %q, %v", b, err)
			}
		})
	}
}

func TestTruncateReadOnlyFileIsDenied(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			runSh(t, tr.spec(m), `truncate -s 0 "$IN/a.txt"; : > "$IN/a.txt"`, tr.env()...)
			if b, _ := os.ReadFile(tr.In + "/a.txt"); string(b) != "inside\n" {
				t.Fatalf("read-only file now holds %q", b)
			}
			r := runSh(t, tr.spec(m), `truncate -s 2 "$WORK/b.txt"`, tr.env()...)
			if b, _ := os.ReadFile(tr.Work + "/b.txt"); r.code != 0 || string(b) != "wo" {
				t.Fatalf("truncating a writable file: exit %d, now %q, stderr %q", r.code, b, r.stderr)
			}
		})
	}
}

// A symlink the tool planted in its writable directory gives no access to
// what it points at.
func TestPlantedSymlinkGivesNoAccess(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			r := runSh(t, tr.spec(m), `ln -s "$OUT/secret.txt" "$WORK/link" && ln -s "$OUT" "$WORK/dirlink"`, tr.env()...)
			if r.code != 0 {
				t.Fatalf("planting links: exit %d, stderr %q", r.code, r.stderr)
			}
			r = runSh(t, tr.spec(m), `cat "$WORK/link"; cat "$WORK/dirlink/secret.txt"; echo x > "$WORK/dirlink/new"`, tr.env()...)
			if strings.Contains(r.stdout, "secret") {
				t.Fatalf("read through a planted link: %q", r.stdout)
			}
			if _, err := os.Stat(tr.Out + "/new"); err == nil {
				t.Fatal("wrote through a planted link")
			}
			// Positive twin: a link to a granted file works.
			must(t, os.Symlink(tr.In+"/a.txt", tr.Work+"/good"))
			r = runSh(t, tr.spec(m), `cat "$WORK/good"`, tr.env()...)
			if r.code != 0 || r.stdout != "inside\n" {
				t.Fatalf("link to a granted file: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// A declared path that goes through a link inside a writable path (the
// tool could have planted it on an earlier run) is refused before start,
// unless the link points inside the grants anyway.
func TestDeclaredPathThroughPlantedLinkIsRefused(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			must(t, os.Symlink(tr.Out, tr.Work+"/cache"))
			spec := tr.spec(m)
			spec.Read = append(spec.Read, tr.Work+"/cache")
			_, err := Start(spec, Command{Path: "/bin/true"})
			r := wantRefusal(t, err, FieldRead)
			if r.Mechanism != m || !strings.Contains(r.Reason, tr.Work) {
				t.Fatalf("refusal %v does not name %s and the writable path", r, m)
			}
			must(t, os.Symlink(tr.In, tr.Work+"/ok"))
			spec = tr.spec(m)
			spec.Read = append(spec.Read, tr.Work+"/ok")
			res := runSh(t, spec, `cat "$WORK/ok/a.txt"`, tr.env()...)
			if res.code != 0 || res.stdout != "inside\n" {
				t.Fatalf("link into a granted path: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
			}
		})
	}
}

// A declared path that does not exist is refused (the compiler reports it
// at lock time); so is a working directory outside the sandbox.
func TestMissingPathAndOutsideDirAreRefused(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			spec := tr.spec(m)
			spec.Write = append(spec.Write, filepath.Join(tr.Base, "missing"))
			_, err := Start(spec, Command{Path: "/bin/true"})
			if r := wantRefusal(t, err, FieldWrite); !strings.Contains(r.Reason, "does not exist") {
				t.Fatalf("reason %q", r.Reason)
			}
			_, err = Start(tr.spec(m), Command{Path: "/bin/true", Dir: tr.Out})
			wantRefusal(t, err, FieldRundir)
			_, err = Start(pin(&Spec{Mechanism: m, Read: []string{"relative/path"}}), Command{Path: "/bin/true"})
			wantRefusal(t, err, FieldRead)
			// Positive twin: a working directory inside a declared path.
			p, out, _ := startSh(t, tr.spec(m), "pwd")
			if code, _ := p.Wait(); code != 0 || out.String() != tr.Tool+"\n" {
				t.Fatalf("default working directory: exit %d, %q, want %q", code, out, tr.Tool)
			}
			var buf strings.Builder
			p2, err := Start(tr.spec(m), Command{Path: "/bin/pwd", Dir: tr.Work, Stdout: &buf})
			must(t, err)
			if code, _ := p2.Wait(); code != 0 || buf.String() != tr.Work+"\n" {
				t.Fatalf("working directory %s: exit %d, %q", tr.Work, code, buf.String())
			}
		})
	}
}

// A root tool cannot create device nodes in its writable directory (it
// could read the host's disk through one). Twin: a fifo is fine.
func TestDeviceNodesAreDenied(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			runSh(t, tr.spec(m), `mknod "$WORK/null2" c 1 3; mknod "$WORK/disk" b 7 0`, tr.env()...)
			for _, p := range []string{tr.Work + "/null2", tr.Work + "/disk"} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("the tool created device node %s", p)
				}
			}
			if r := runSh(t, tr.spec(m), `mkfifo "$WORK/fifo"`, tr.env()...); r.code != 0 {
				t.Fatalf("mkfifo in a writable directory: exit %d, %q", r.code, r.stderr)
			}
		})
	}
}

// Root's capabilities do not reach a sandboxed tool (Landlock alone would
// leave them: chown, module loading, raw I/O). Twin: under None root can
// give a file away.
func TestRootCapabilitiesDropped(t *testing.T) {
	requireRoot(t)
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			r := runSh(t, tr.spec(m), `chown 65534 "$WORK/b.txt"`, tr.env()...)
			uid, _ := owner(t, tr.Work+"/b.txt")
			if m == None {
				if r.code != 0 || uid != 65534 {
					t.Fatalf("twin: root could not chown under None: exit %d, %q", r.code, r.stderr)
				}
				return
			}
			if r.code == 0 || uid != 0 {
				t.Fatalf("a sandboxed root tool gave a file away (owner now %d)", uid)
			}
		})
	}
}

// A single file can be granted: it is readable, its siblings are not.
func TestSingleFileGrant(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			must(t, os.WriteFile(tr.Out+"/other.txt", []byte("other\n"), 0o644))
			spec := tr.spec(m)
			spec.Read = append(spec.Read, tr.Out+"/secret.txt")
			r := runSh(t, spec, `cat "$OUT/secret.txt"; cat "$OUT/other.txt"; echo x >> "$OUT/secret.txt"`, tr.env()...)
			if r.stdout != "secret\n" {
				t.Fatalf("granted file and sibling: stdout %q, stderr %q", r.stdout, r.stderr)
			}
			if b, _ := os.ReadFile(tr.Out + "/secret.txt"); string(b) != "secret\n" {
				t.Fatalf("a read-only file was appended to: %q", b)
			}
		})
	}
}
